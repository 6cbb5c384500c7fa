#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec disk_adapter_spec();
}
