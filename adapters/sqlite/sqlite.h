#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec sqlite_adapter_spec();
}
