#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec null_adapter_spec();
}
