// A FIFO of the requests in flight of one pipelined connection (redis, memcached): a ring that
// allocates only when it grows past its largest size so far (a deque allocates a block every
// few dozen requests, on the hot path).
#pragma once
#include <cstddef>
#include <vector>

namespace mw::conn {

template <class T>
class Ring {
 public:
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  const T& front() const { return buf_[head_]; }
  void push_back(const T& v) {
    if (n_ == buf_.size()) grow();
    buf_[(head_ + n_++) & (buf_.size() - 1)] = v;
  }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --n_;
  }
  void clear() { head_ = n_ = 0; }

 private:
  void grow() {  // sizes are powers of two
    std::vector<T> next(buf_.empty() ? 64 : buf_.size() * 2);
    for (size_t i = 0; i < n_; ++i) next[i] = (*this)[i];
    buf_.swap(next);
    head_ = 0;
  }
  std::vector<T> buf_;
  size_t head_ = 0, n_ = 0;
};

}  // namespace mw::conn
