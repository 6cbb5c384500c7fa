#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec http_adapter_spec();
}
