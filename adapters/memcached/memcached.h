#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec memcached_adapter_spec();
}
