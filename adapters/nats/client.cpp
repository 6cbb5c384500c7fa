#include "adapters/nats/client.h"

#include <mutex>
#include <unordered_map>

#include "util/status.h"

namespace mw::nats {
namespace {

// A connection's hooks and its wire, by the number its callbacks carry.
struct Entry {
  std::shared_ptr<Hooks> hooks;
  std::shared_ptr<Wire> wire;
};
std::mutex g_mu;
std::unordered_map<uintptr_t, Entry>& hooks() {
  static std::unordered_map<uintptr_t, Entry> m;
  return m;
}
uintptr_t g_next = 1;

Entry find(void* closure) {
  std::lock_guard lk(g_mu);
  auto it = hooks().find(reinterpret_cast<uintptr_t>(closure));
  return it == hooks().end() ? Entry{} : it->second;
}

void on_closed(natsConnection*, void* closure) {
  if (Entry e = find(closure); e.hooks) e.hooks->closed(e.wire->ended());
}

}  // namespace

// An IPv6 address in a URL is bracketed.
std::string url_host(const std::string& h) { return h.find(':') == std::string::npos ? h : "[" + h + "]"; }

std::string Endpoint::where() const { return conn::describe_addresses({host, port}, others); }

int64_t Endpoint::timeout_ms() const { return std::max<int64_t>(1, static_cast<int64_t>(timeout_s * 1000)); }

std::string why(natsStatus s, jsErrCode code) {
  std::string w = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  if (text && *text && w.find(text) == std::string::npos) w += std::string(" (") + text + ")";
  if (code != 0) w += " [JetStream error " + std::to_string(static_cast<int>(code)) + "]";
  return w;
}

void on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  if (Entry e = find(closure); e.hooks) e.hooks->acked(msg, pa, pae);
  natsMsg_Destroy(msg);  // the handler owns it (nats.h)
}

Conn::Conn(const Endpoint& ep, std::shared_ptr<Hooks> h) : ep_(ep) {
  watch_libnats();
  wire_ = std::make_shared<Wire>(ep_.max_frame, ep_.timeout_s);
  if (h) {
    std::lock_guard lk(g_mu);
    id_ = g_next++;
    hooks()[id_] = {std::move(h), wire_};
  }
  std::vector<std::string> urls{"nats://" + url_host(ep_.host) + ":" + std::to_string(ep_.port)};
  for (const conn::HostPort& a : ep_.others)
    urls.push_back("nats://" + url_host(a.host) + ":" + std::to_string(a.port));
  std::vector<const char*> list;
  for (const std::string& u : urls) list.push_back(u.c_str());
  natsStatus s = natsOptions_Create(&opts_);
  if (s == NATS_OK) s = natsOptions_SetServers(opts_, list.data(), static_cast<int>(list.size()));
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts_, ep_.timeout_ms());
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts_, false);
  if (s == NATS_OK) s = natsOptions_SetWriteDeadline(opts_, ep_.timeout_ms());
  if (s == NATS_OK && id_) s = natsOptions_SetClosedCB(opts_, on_closed, closure());
  if (s == NATS_OK && !ep_.user.empty()) s = natsOptions_SetUserInfo(opts_, ep_.user.c_str(), ep_.password.c_str());
  if (s == NATS_OK) {
    Connecting connecting(wire_);
    s = natsConnection_Connect(&nc_, opts_);
  }
  if (s != NATS_OK) {
    std::string w = why(s);
    natsOptions_Destroy(opts_);
    std::lock_guard lk(g_mu);
    hooks().erase(id_);
    if (s == NATS_CONNECTION_AUTH_FAILED || w.find("Authorization") != std::string::npos)
      w += " (login as " + (ep_.user.empty() ? std::string("no user") : ep_.user) +
           ": are --user and the password in --password-env right?)";
    if (wire_->interrupted()) throw Interrupted("nats " + ep_.where() + ": " + w);
    throw SetupError("nats " + ep_.where() + ": cannot connect: " + w);
  }
}

Conn::~Conn() {
  {
    std::lock_guard lk(g_mu);
    hooks().erase(id_);
  }
  if (js_) jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);  // closes it
  natsOptions_Destroy(opts_);
}

jsCtx* Conn::js(int64_t max_pending) {
  if (js_) return js_;
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = ep_.timeout_ms();
  if (id_) {
    o.PublishAsync.AckHandler = on_ack;
    o.PublishAsync.AckHandlerClosure = closure();
    if (max_pending > 0) o.PublishAsync.MaxPending = max_pending;
  }
  if (natsStatus s = natsConnection_JetStream(&js_, nc_, &o); s != NATS_OK) fail("JetStream context: " + why(s));
  return js_;
}

std::string Conn::why(natsStatus s, jsErrCode code) const {
  std::string w = wire_->ended();
  return w.empty() ? nats::why(s, code) : w;
}

void Conn::fail(const std::string& what) const { throw SetupError("nats " + ep_.where() + ": " + what); }

}  // namespace mw::nats
