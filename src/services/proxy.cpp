#include "services/proxy.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "util/clock.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {

std::atomic<FaultProxy*> g_route{nullptr};

void reset_close(int fd) {  // an RST to the peer, not a FIN
  if (fd < 0) return;
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

// A non-blocking listener on 127.0.0.1:port (0: a free one); -1 when it cannot be had.
int listen_on(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, SOMAXCONN) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Chunk {
  int64_t release = 0;  // now_ns: not passed on before
  std::string bytes;
  size_t off = 0;
};

struct Dir {  // one direction of a connection: read from one socket, written to the other
  std::deque<Chunk> q;
  size_t held = 0;
  bool eof = false;     // the source closed its side
  bool shut = false;    // and that was passed on (shutdown SHUT_WR)
  int64_t stalled = 0;  // now_ns since a write would block with bytes due; 0: none
};

struct Pair {
  int c = -1, u = -1;      // the client's connection, the upstream's
  bool connecting = true;  // the upstream's connect is under way
  int64_t deadline = 0;    // ... until then
  Dir up, down;            // client -> upstream, upstream -> client
  uint32_t ev_c = 0, ev_u = 0;
  bool c_off = false, u_off = false;  // out of the watch: read to its end, written and shut
  bool dead = false;
};

struct Route {
  int fd = -1, port = 0;
  bool registered = false;
  sockaddr_storage to{};
  socklen_t to_len = 0;
  std::string upstream;  // "host:port"
};

}  // namespace

struct FaultProxy::Loop {
  FaultProxy& owner;
  int64_t timeout_ns;
  int ep = -1, wake = -1;
  std::mutex mu;  // routes, the command and its answer
  std::condition_variable answered;
  std::deque<Route> routes;
  int command = 0;  // 1: cut, 2: listen again
  uint64_t asked = 0, done = 0;
  std::string answer;
  bool cut = false;
  std::atomic<bool> quit{false};
  std::unordered_map<int, Route*> listeners;
  std::unordered_map<int, Pair*> by_fd;
  std::unordered_map<Pair*, std::unique_ptr<Pair>> pairs;
  // Sockets of ended pairs, closed (reset: true) once the batch of events they were ended in is
  // done: closed at once, a connection accepted later in the batch could take the number and be
  // handed an event of the old one.
  std::vector<std::pair<int, bool>> ended;

  Loop(FaultProxy& o, double timeout_s) : owner(o), timeout_ns(static_cast<int64_t>(timeout_s * 1e9)) {
    ep = epoll_create1(EPOLL_CLOEXEC);
    wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep < 0 || wake < 0) throw SetupError(std::string("proxy: cannot make its event loop: ") + std::strerror(errno));
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = wake;
    epoll_ctl(ep, EPOLL_CTL_ADD, wake, &e);
  }
  ~Loop() {
    close_ended();
    for (auto& [p, owned] : pairs) reset_close(p->c), reset_close(p->u);
    for (Route& r : routes)
      if (r.fd >= 0) close(r.fd);
    if (wake >= 0) close(wake);
    if (ep >= 0) close(ep);
  }

  void poke() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake, &one, sizeof one);
  }

  void watch(int fd, uint32_t events, bool add) {
    epoll_event e{};
    e.events = events;
    e.data.fd = fd;
    epoll_ctl(ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &e);
  }

  // The pair closed: reset (RST both ways: a fault, or one side reset) or closed (both sides done).
  void end(Pair& p, bool reset) {
    if (p.dead) return;
    p.dead = true;
    for (int fd : {p.c, p.u}) {
      if (fd < 0) continue;
      epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
      by_fd.erase(fd);
      ended.emplace_back(fd, reset);
    }
  }

  void close_ended() {
    for (auto [fd, reset] : ended)
      if (reset)
        reset_close(fd);
      else
        close(fd);
    ended.clear();
  }

  void accept_all(Route& r) {
    for (;;) {
      const int c = accept4(r.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) return;  // EAGAIN, or an error of that one connection
      const int u = socket(r.to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (u < 0) {
        reset_close(c);
        continue;
      }
      const int one = 1;
      setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (connect(u, reinterpret_cast<const sockaddr*>(&r.to), r.to_len) != 0 && errno != EINPROGRESS) {
        reset_close(c);  // the server is gone: so is this connection
        close(u);
        continue;
      }
      auto owned = std::make_unique<Pair>();
      Pair* p = owned.get();
      p->c = c, p->u = u, p->deadline = now_ns() + timeout_ns;
      pairs.emplace(p, std::move(owned));
      by_fd[c] = by_fd[u] = p;
      p->ev_c = EPOLLIN, p->ev_u = EPOLLOUT;
      watch(c, p->ev_c, true);
      watch(u, p->ev_u, true);
      owner.relayed_.fetch_add(1);
    }
  }

  // Reads what `from` has, as chunks released `delay` from now, up to the direction's bound.
  void read_into(Pair& p, int from, Dir& d) {
    char buf[65536];
    const int64_t delay = owner.delay_ns_.load();
    while (!d.eof && d.held < kProxyBuffer) {
      const ssize_t n = read(from, buf, std::min(sizeof buf, kProxyBuffer - d.held));
      if (n > 0) {
        d.q.push_back({now_ns() + delay, std::string(buf, static_cast<size_t>(n))});
        d.held += static_cast<size_t>(n);
        continue;
      }
      if (n == 0) {
        d.eof = true;
        return;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      return end(p, true);  // reset by its peer: the other side is reset too
    }
  }

  // Writes the chunks that are due to `to`; false when the pair ended.
  bool flush(Pair& p, Dir& d, int to, int64_t now) {
    while (!d.q.empty() && d.q.front().release <= now) {
      Chunk& ch = d.q.front();
      const ssize_t n = send(to, ch.bytes.data() + ch.off, ch.bytes.size() - ch.off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          end(p, true);
          return false;
        }
        if (!d.stalled) d.stalled = now;
        if (now - d.stalled > timeout_ns) {  // no progress within the timeout
          end(p, true);
          return false;
        }
        return true;
      }
      d.stalled = 0;
      ch.off += static_cast<size_t>(n);
      d.held -= static_cast<size_t>(n);
      if (ch.off == ch.bytes.size()) d.q.pop_front();
    }
    if (d.q.empty() || d.q.front().release > now) d.stalled = 0;
    if (d.q.empty() && d.eof && !d.shut) {
      shutdown(to, SHUT_WR);
      d.shut = true;
    }
    return true;
  }

  // Due chunks passed on, the deadlines checked, and what each socket waits for set.
  void pump(Pair& p, int64_t now) {
    if (p.dead) return;
    if (p.connecting) {
      if (now > p.deadline) return end(p, true);
    } else {
      if (!flush(p, p.up, p.u, now) || !flush(p, p.down, p.c, now)) return;
      if (p.up.shut && p.down.shut) return end(p, false);
    }
    const uint32_t ec = (!p.up.eof && p.up.held < kProxyBuffer ? EPOLLIN : 0u) | (p.down.stalled ? EPOLLOUT : 0u);
    const uint32_t eu =
        p.connecting ? EPOLLOUT
                     : (!p.down.eof && p.down.held < kProxyBuffer ? EPOLLIN : 0u) | (p.up.stalled ? EPOLLOUT : 0u);
    // A socket read to its end and shut for writing reports a hang-up at every wait, whatever it
    // is watched for: it leaves the watch (else the loop spins while the other way drains).
    if (!p.connecting && !p.c_off && p.up.eof && p.down.shut)
      epoll_ctl(ep, EPOLL_CTL_DEL, p.c, nullptr), p.c_off = true;
    if (!p.connecting && !p.u_off && p.down.eof && p.up.shut)
      epoll_ctl(ep, EPOLL_CTL_DEL, p.u, nullptr), p.u_off = true;
    if (ec != p.ev_c && !p.c_off) watch(p.c, p.ev_c = ec, false);
    if (eu != p.ev_u && !p.u_off) watch(p.u, p.ev_u = eu, false);
  }

  void on_event(Pair& p, int fd, uint32_t ev) {
    if (fd == p.u && p.connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      if ((ev & (EPOLLERR | EPOLLHUP)) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
        return end(p, true);  // refused: the client is reset as a dead server's would be
      if (!(ev & EPOLLOUT)) return;
      p.connecting = false;
      return;
    }
    if (ev & EPOLLERR) return end(p, true);
    if (ev & (EPOLLIN | EPOLLHUP)) {
      if (fd == p.c)
        read_into(p, p.c, p.up);
      else if (!p.connecting)
        read_into(p, p.u, p.down);
    }
  }

  // The next moment a held chunk falls due or a deadline passes; -1: none (the wake-up ends the wait).
  int wait_ms(int64_t now) const {
    int64_t next = now + 100'000'000;  // a deadline is looked at this often at least
    for (const auto& [raw, owned] : pairs) {
      const Pair& p = *raw;
      if (p.connecting) next = std::min(next, p.deadline);
      for (const Dir* d : {&p.up, &p.down}) {
        if (!d->q.empty()) next = std::min(next, d->q.front().release);
        if (d->stalled) next = std::min(next, d->stalled + timeout_ns);
      }
    }
    return static_cast<int>(std::clamp<int64_t>((next - now + 999'999) / 1'000'000, 0, 100));
  }

  void commands() {
    uint64_t n = 0;
    [[maybe_unused]] const ssize_t got = read(wake, &n, sizeof n);
    std::lock_guard lk(mu);
    for (Route& r : routes)
      if (!r.registered && r.fd >= 0) {
        r.registered = true;
        listeners[r.fd] = &r;
        watch(r.fd, EPOLLIN, true);
      }
    if (done == asked) return;
    answer.clear();
    if (command == 1) {
      uint64_t reset = 0;
      for (auto& [raw, owned] : pairs)
        if (!raw->dead) end(*raw, true), ++reset;
      pairs.clear();
      owner.resets_.fetch_add(reset);
      for (Route& r : routes)
        if (r.fd >= 0) {
          epoll_ctl(ep, EPOLL_CTL_DEL, r.fd, nullptr);
          listeners.erase(r.fd);
          close(r.fd);  // connects are refused now; those queued are reset
          r.fd = -1;
        }
      cut = true;
    } else {
      for (Route& r : routes)
        if (r.fd < 0) {
          r.fd = listen_on(r.port);
          if (r.fd < 0) {
            answer += (answer.empty() ? "" : "; ") + std::string("127.0.0.1:") + std::to_string(r.port) +
                      " could not be listened on again: " + std::strerror(errno);
            continue;
          }
          listeners[r.fd] = &r;
          watch(r.fd, EPOLLIN, true);
        }
      cut = false;
    }
    close_ended();  // a cut's resets are sent before it is answered
    done = asked;
    answered.notify_all();
  }

  void run() {
    epoll_event evs[64];
    while (!quit.load()) {
      const int n = epoll_wait(ep, evs, 64, wait_ms(now_ns()));
      for (int i = 0; i < n; ++i) {
        const int fd = evs[i].data.fd;
        if (fd == wake) {
          commands();
          continue;
        }
        if (auto l = listeners.find(fd); l != listeners.end()) {
          accept_all(*l->second);
          continue;
        }
        if (auto p = by_fd.find(fd); p != by_fd.end()) on_event(*p->second, fd, evs[i].events);
      }
      const int64_t now = now_ns();
      for (auto it = pairs.begin(); it != pairs.end();) {
        pump(*it->first, now);
        it = it->first->dead ? pairs.erase(it) : std::next(it);
      }
      close_ended();
    }
  }
};

FaultProxy::FaultProxy(double timeout_s) : loop_(std::make_unique<Loop>(*this, timeout_s > 0 ? timeout_s : 5)) {
  thread_ = std::thread([this] { loop_->run(); });
}

FaultProxy::~FaultProxy() {
  loop_->quit = true;
  loop_->poke();
  if (thread_.joinable()) thread_.join();
}

int FaultProxy::add(const std::string& host, int port) {
  Route r;
  r.upstream = host + ":" + std::to_string(port);
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || !res)
    throw SetupError("proxy: cannot resolve " + printable(r.upstream));
  std::memcpy(&r.to, res->ai_addr, res->ai_addrlen);
  r.to_len = res->ai_addrlen;
  freeaddrinfo(res);
  r.fd = listen_on(0);
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (r.fd < 0 || getsockname(r.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (r.fd >= 0) close(r.fd);
    throw SetupError("proxy: cannot listen on 127.0.0.1 for " + printable(r.upstream));
  }
  r.port = ntohs(a.sin_port);
  {
    std::lock_guard lk(loop_->mu);
    loop_->routes.push_back(r);
  }
  loop_->poke();
  return r.port;
}

std::string FaultProxy::describe() const {
  std::lock_guard lk(loop_->mu);
  std::string s;
  for (const Route& r : loop_->routes)
    s += (s.empty() ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(r.port) + " -> " + printable(r.upstream);
  return s;
}

size_t FaultProxy::routes() const {
  std::lock_guard lk(loop_->mu);
  return loop_->routes.size();
}

std::string FaultProxy::cut(bool on) {
  std::unique_lock lk(loop_->mu);
  loop_->command = on ? 1 : 2;
  const uint64_t ticket = ++loop_->asked;
  loop_->poke();
  if (!loop_->answered.wait_for(lk, std::chrono::seconds(5), [&] { return loop_->done >= ticket; }))
    return "the proxy did not answer within 5 s";
  return loop_->answer;
}

ProxyRoute::ProxyRoute(FaultProxy* proxy) { g_route.store(proxy); }
ProxyRoute::~ProxyRoute() { g_route.store(nullptr); }
FaultProxy* routed_proxy() { return g_route.load(); }

}  // namespace mw
