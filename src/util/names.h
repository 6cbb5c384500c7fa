// An enum's names as files, options and messages spell them: value k is names[k]. One table of
// names beside each enum serves its writer, its reader, its option and the result's JSON Schema.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mw {

template <class E>
struct Names {
  std::span<const char* const> all;

  constexpr const char* operator()(E e) const { return all[static_cast<size_t>(e)]; }
  // The value a text names; nullopt for any other text.
  std::optional<E> parse(std::string_view name) const {
    for (size_t k = 0; k < all.size(); ++k)
      if (name == all[k]) return static_cast<E>(k);
    return std::nullopt;
  }
  // "a, b or c": what a message says the value must be.
  std::string alternatives() const {
    std::string out;
    for (size_t k = 0; k < all.size(); ++k)
      out += std::string(k == 0 ? "" : k + 1 < all.size() ? ", " : " or ") + all[k];
    return out;
  }
};

}  // namespace mw
