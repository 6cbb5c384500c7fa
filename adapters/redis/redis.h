#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec redis_adapter_spec();
}
