#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec redis_adapter_spec();
}
