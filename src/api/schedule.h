#pragma once
// When the op being sent now was due, for an adapter that carries a send time in its payload.
#include <cstdint>

namespace mw {

// The driver's open loop sets it around each send to the op's slot in the schedule and back to 0
// after; 0 means now (a closed loop, a prefill). A queue's producer stamps its message with it, so
// the round trip counts from when the message was due, as the latency columns count from when the
// op was due (coordinated omission corrected): a producer held up does not hide its delay.
inline thread_local int64_t op_due_ns = 0;

}  // namespace mw
