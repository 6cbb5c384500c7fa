# Its own text and meta protocol client (adapters/memcached, on adapters/conn): no library.
mw_adapter(memcached ORDER 40 SPEC memcached_adapter_spec HEADER memcached.h
  SERVERS memcached
  TOOLS libmemcached-tools
  SERVICES memcached
  TESTS_ALONE)
