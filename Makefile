# PGXS build of the extension: the C glue plus the C++ core, linked into simhash.so.
# The core is also built and unit-tested on its own by CMake (CMakeLists.txt).

EXTENSION = simhash
EXTVERSION = 0.2

MODULE_big = simhash
# Every source file of the three layers: the same folders CMake builds the core from, so
# the two lists cannot drift apart.
OBJS = \
	$(patsubst %.c,%.o,$(sort $(wildcard src/pg/*.c))) \
	$(patsubst %.cpp,%.o,$(sort $(wildcard src/capi/*.cpp src/core/*.cpp)))

# One full install script per release (CREATE EXTENSION simhash runs the newest), and the
# upgrade scripts between releases. 0.1 is frozen. The 0.1 -> 0.2 upgrade is made from the
# 0.2 script: everything but its section of the 0.1 objects (see its header).
DATA = \
	src/sql/simhash--0.1.sql \
	src/sql/simhash--0.2.sql
DATA_built = simhash--0.1--0.2.sql
EXTRA_CLEAN = simhash--0.1--0.2.sql

# pg_regress files (sql/NAME.sql, expected/NAME.out), run in this order in one database;
# simhash_basic creates the extension.
REGRESS = \
	simhash_basic \
	simhash_text \
	simhash_usage \
	simhash_options \
	simhash_features \
	simhash_tsvector \
	simhash_idf \
	simhash_convert \
	simhash_search \
	simhash_dedupe \
	simhash_dedupe_view \
	simhash_dedupe_security \
	simhash_dedupe_bulk \
	simhash_dedupe_insert_values \
	simhash_dedupe_insert_attack \
	simhash_dedupe_bulk_filter \
	simhash_dedupe_table_filter \
	simhash_dedupe_table_filter_bypass \
	simhash_dedupe_table_index \
	simhash_dedupe_table_index_bypass \
	simhash_dedupe_bulk_plan \
	simhash_dedupe_bulk_plan_writes \
	simhash_dedupe_bulk_nested \
	simhash_dedupe_sets \
	simhash_dedupe_sets_malformed \
	simhash_dedupe_probes \
	simhash_dedupe_equivalence \
	simhash_pairs \
	simhash_similar \
	simhash_hugetext \
	simhash_cancel \
	simhash_hostile \
	simhash_overloads \
	simhash_trusted \
	simhash_privileges \
	simhash_extschema \
	simhash_upgrade \
	simhash_catalog \
	simhash_bounded \
	simhash_ops \
	simhash_attack \
	simhash_attack_round4 \
	simhash_readme \
	simhash_reference
REGRESS_OPTS = --inputdir=. --outputdir=.

# Isolation tests (specs/NAME.spec, expected/NAME.out): exact interleavings of concurrent
# sessions, run by pg_isolation_regress after the pg_regress files.
ISOLATION = \
	simhash_dedupe_read_committed \
	simhash_dedupe_snapshot \
	simhash_dedupe_policies \
	simhash_dedupe_similarity \
	simhash_dedupe_privileges \
	simhash_dedupe_bulk_deadlock \
	simhash_dedupe_share_lock \
	simhash_dedupe_bulk_plan_locks
ISOLATION_OPTS = --inputdir=. --outputdir=output_iso

# TAP tests (t/*.pl, PostgreSQL::Test::Cluster): crash recovery, a streaming replica, a
# small lock table. `make installcheck` runs them last, through prove; TAP_TESTS= leaves
# them out. The servers they start refuse to run as root, so as root it leaves them out
# too, and says so: scripts/tap.sh runs them alone (REGRESS= ISOLATION=) as the server user.
SIMHASH_AS_ROOT := $(filter 0,$(shell id -u))
ifeq ($(SIMHASH_AS_ROOT),)
TAP_TESTS = 1
endif

PG_CPPFLAGS = -I$(srcdir)/src
PG_CXXFLAGS = -std=c++17 -O3 -fvisibility=hidden -fvisibility-inlines-hidden
SHLIB_LINK = -lstdc++

# No LLVM bitcode for JIT inlining: our functions are opaque calls into C++ anyway, and the
# bitcode step would need clang++ with our C++ flags.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# After PGXS, so that its "all" stays the default goal.
simhash--0.1--0.2.sql: src/sql/simhash--0.2.sql
	{ printf '%s\n' '-- simhash 0.1 -> 0.2, made by the Makefile from src/sql/simhash--0.2.sql (edit that).' \
	    '\echo Use "ALTER EXTENSION simhash UPDATE TO '"'"'0.2'"'"'" to load this file. \quit'; \
	  sed -e '1,/^\\echo /d' -e '/^-- >>> 0.1 objects/,/^-- <<< 0.1 objects/d' $<; } > $@

# PGXS tracks no header dependencies: rebuild every object when a header changes.
$(OBJS): $(wildcard src/core/*.hpp src/core/*.inc src/capi/*.h src/capi/*.hpp src/pg/*.h)


# As root, installcheck says why the TAP tests are left out (unless TAP_TESTS was given).
ifneq ($(SIMHASH_AS_ROOT),)
ifeq ($(origin TAP_TESTS),undefined)
installcheck: tap-not-as-root
endif
endif
.PHONY: tap-not-as-root
tap-not-as-root:
	@echo "TAP tests (t/) left out: their servers refuse to run as root; scripts/tap.sh runs them as the server user"

# The SQL blocks of README.md and docs/reference.md, as pg_regress files whose expected
# output is the output each page shows (tools/doc_sql.pl; made here, not committed): each
# runs its page's blocks in a fresh database of its own, so a page that says what the
# server does not answer fails installcheck. Made before installcheck and before
# print-regress, whose callers (test/hostile/run.sh, scripts/valgrind_regress.sh) run them.
DOC_TESTS = sql/simhash_readme.sql expected/simhash_readme.out \
	sql/simhash_reference.sql expected/simhash_reference.out
EXTRA_CLEAN += $(DOC_TESTS)
sql/simhash_readme.sql expected/simhash_readme.out &: README.md tools/doc_sql.pl
	perl tools/doc_sql.pl README.md simhash_readme
sql/simhash_reference.sql expected/simhash_reference.out &: docs/reference.md tools/doc_sql.pl
	perl tools/doc_sql.pl docs/reference.md simhash_reference
installcheck: $(DOC_TESTS)

# The pg_regress files, for scripts/test.sh, which also runs each one alone.
.PHONY: print-regress
print-regress: $(DOC_TESTS)
	@echo $(REGRESS)
