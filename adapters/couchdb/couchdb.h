#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec couchdb_adapter_spec();
}
