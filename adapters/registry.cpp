// The one list of adapters. Adding one: a folder under adapters/, one line here, one test file.
// An adapter whose libraries are optional has adapters/NAME/adapter.cmake (mw_optional_adapter)
// and its line here stands under #if MWBENCH_WITH_<NAME>.
#include "adapters/registry.h"

#include "adapters/beanstalkd/beanstalkd.h"
#include "config/capabilities.h"
#if MWBENCH_WITH_COUCHDB
#include "adapters/couchdb/couchdb.h"
#endif
#if MWBENCH_WITH_DISK
#include "adapters/disk/disk.h"
#endif
#include "adapters/echo/echo.h"
#if MWBENCH_WITH_GEARMAN
#include "adapters/gearman/gearman.h"
#endif
#if MWBENCH_WITH_HTTP
#include "adapters/http/http.h"
#endif
#include "adapters/memcached/memcached.h"
#if MWBENCH_WITH_MQTT
#include "adapters/mqtt/mqtt.h"
#endif
#if MWBENCH_WITH_MARIADB
#include "adapters/mariadb/mariadb.h"
#endif
#if MWBENCH_WITH_NATS
#include "adapters/nats/nats_spec.h"
#endif
#include "adapters/null/null.h"
#if MWBENCH_WITH_POSTGRES
#include "adapters/postgres/postgres.h"
#endif
#if MWBENCH_WITH_RABBITMQ
#include "adapters/rabbitmq/rabbitmq.h"
#endif
#include "adapters/redis/redis.h"
#if MWBENCH_WITH_SQLITE
#include "adapters/sqlite/sqlite.h"
#endif
#if MWBENCH_WITH_TOKYOCABINET
#include "adapters/tokyocabinet/tokyocabinet.h"
#endif
#if MWBENCH_WITH_LMDB
#include "adapters/lmdb/lmdb.h"
#endif
#if MWBENCH_WITH_ROCKSDB
#include "adapters/rocksdb/rocksdb.h"
#endif

namespace mw {

std::vector<AdapterSpec> registered_adapters() {
  std::vector<AdapterSpec> l = {
    null_adapter_spec(),
#if MWBENCH_WITH_SQLITE
    sqlite_adapter_spec(),
#endif
    redis_adapter_spec(),
    memcached_adapter_spec(),
#if MWBENCH_WITH_GEARMAN
    gearman_adapter_spec(),
#endif
#if MWBENCH_WITH_COUCHDB
    couchdb_adapter_spec(),
#endif
#if MWBENCH_WITH_HTTP
    http_adapter_spec(),
#endif
#if MWBENCH_WITH_TOKYOCABINET
    tokyocabinet_adapter_spec(),
#endif
#if MWBENCH_WITH_LMDB
    lmdb_adapter_spec(),
#endif
#if MWBENCH_WITH_ROCKSDB
    rocksdb_adapter_spec(),
#endif
#if MWBENCH_WITH_DISK
    disk_adapter_spec(),
#endif
    echo_adapter_spec(),
#if MWBENCH_WITH_POSTGRES
    postgres_adapter_spec(),
#endif
#if MWBENCH_WITH_MARIADB
    mariadb_adapter_spec(),
#endif
#if MWBENCH_WITH_RABBITMQ
    rabbitmq_adapter_spec(),
#endif
#if MWBENCH_WITH_NATS
    nats_adapter_spec(),
#endif
    beanstalkd_adapter_spec(),
#if MWBENCH_WITH_MQTT
    mqtt_adapter_spec(),
#endif
  };
  for (AdapterSpec& a : l) a = complete_spec(std::move(a));  // what its capabilities imply
  return l;
}

void install_registered_adapters() { install_adapters(registered_adapters()); }

std::vector<std::pair<std::string, std::string>> adapters_not_built() {
  std::vector<std::pair<std::string, std::string>> off;
  std::string list = MWBENCH_ADAPTERS_OFF;  // "name=package,name=package" from CMake
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(at, end - at);
    size_t eq = item.find('=');
    if (eq != std::string::npos) off.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    at = end + 1;
  }
  return off;
}

}  // namespace mw
