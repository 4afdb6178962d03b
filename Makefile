# PGXS build of the extension: the C glue plus the C++ core, linked into simhash.so.
# The core is also built and unit-tested on its own by CMake (CMakeLists.txt).

EXTENSION = simhash
EXTVERSION = 0.2

MODULE_big = simhash
OBJS = \
	src/pg/simhash_pg.o \
	src/pg/pairs.o \
	src/capi/simhash_capi.o \
	src/capi/pairs_capi.o \
	src/core/fingerprint.o \
	src/core/near_pairs.o \
	src/core/tokenizer.o \
	src/core/unicode.o

# 0.1 is frozen; CREATE EXTENSION installs it and then runs the update scripts.
DATA = \
	src/sql/simhash--0.1.sql \
	src/sql/simhash--0.1--0.2.sql

# pg_regress files (sql/NAME.sql, expected/NAME.out), run in this order in one database;
# simhash_basic creates the extension.
REGRESS = \
	simhash_basic \
	simhash_text \
	simhash_usage \
	simhash_upgrade \
	simhash_pairs \
	simhash_catalog
REGRESS_OPTS = --inputdir=. --outputdir=.

PG_CPPFLAGS = -I$(srcdir)/src
PG_CXXFLAGS = -std=c++17 -O3 -fvisibility=hidden -fvisibility-inlines-hidden
SHLIB_LINK = -lstdc++

# No LLVM bitcode for JIT inlining: our functions are opaque calls into C++ anyway, and the
# bitcode step would need clang++ with our C++ flags.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header changes.
$(OBJS): $(wildcard src/core/*.hpp src/core/*.inc src/capi/*.h src/capi/*.hpp src/pg/*.h)
