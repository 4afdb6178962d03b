// Included first by every core header: the core is plain C++ with no PostgreSQL in it, so
// it can be unit-tested and reused. Including a PostgreSQL header before a core header is a
// build error, not a silent dependency.
#pragma once

#if defined(PG_VERSION_NUM) || defined(POSTGRES_H)
#error "simhash core headers must not be compiled together with PostgreSQL headers"
#endif
