// Typed adapter options and ops, declared once (fio's option tables: `offsetof` into a typed
// struct; the core applies defaults, checks ranges and prints help).
//
// An adapter declares a plain struct whose member initialisers are the defaults, and binds each
// member to an option:
//
//   struct SqliteOptions { std::string path = "/var/tmp"; int64_t rows = 10000; bool keep = false; };
//   .options = {opt(&SqliteOptions::path, {.name = "path", .help = "...", .list = true}),
//               opt(&SqliteOptions::rows, {.name = "rows", .help = "...", .min = 1, .max = 1e9}), ...}
//
// The kind (Int, Num, Bool, Str) comes from the member's type and the default shown in --help from
// the struct, so neither is written twice. The core checks every value against the option's kind,
// choices and range before a job runs (config.cpp), then the adapter asks for the filled struct:
//
//   const auto o = options_of<SqliteOptions>(job);
//
// Ops are a table of {name, enum}: `.ops = {{"insert", Op::Insert}, ...}` and `op_of<Op>(job)`.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "api/adapter.h"

namespace mw {

// "64M" for 67108864, "0.99" as it is: how a default or a bound is shown.
std::string show_count(double v);
bool parse_bool_word(const std::string& v);  // true/false, 1/0, yes/no (checked before)

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {
  using type = T;
};

// The kind of an option held in a T, its default's text, and its parser.
template <class T>
constexpr OptionSpec::Kind kind_of() {
  if constexpr (std::is_same_v<T, bool>)
    return OptionSpec::Kind::Bool;
  else if constexpr (std::is_integral_v<T>)
    return OptionSpec::Kind::Int;
  else if constexpr (std::is_floating_point_v<T>)
    return OptionSpec::Kind::Num;
  else
    return OptionSpec::Kind::Str;
}
template <class T>
std::string text_of(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_arithmetic_v<T>)
    return show_count(static_cast<double>(v));
  else
    return v;
}
int64_t parse_int(const std::string& v);
double parse_num(const std::string& v);
template <class T>
T parse_as(const std::string& v) {
  if constexpr (std::is_same_v<T, bool>)
    return parse_bool_word(v);
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(parse_int(v));
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(parse_num(v));
  else
    return v;
}
// Fills the members of `into` (a T) bound by the options of owner T from the job's values.
void fill_options(const Job& job, const std::vector<OptionSpec>& options, const std::type_info& owner, void* into);
const AdapterSpec& spec_of(const Job& job);
}  // namespace detail

// Binds a member of an adapter's options struct (bool, a whole number, a number, a string, or a
// std::optional of one: no default, the adapter decides) to the option described by `spec`.
template <class O, class T>
OptionSpec opt(T O::*member, OptionSpec spec) {
  using V =
      typename std::conditional_t<detail::is_optional<T>::value, detail::is_optional<T>, std::type_identity<T>>::type;
  spec.kind = detail::kind_of<V>();
  if constexpr (!detail::is_optional<T>::value) {
    if (spec.def.empty()) spec.def = detail::text_of(O{}.*member);
  }
  spec.owner = &typeid(O);
  spec.store = [member](void* o, const std::string& v) { static_cast<O*>(o)->*member = detail::parse_as<V>(v); };
  return spec;
}

// Binds a member (an enum, or a bool such as per-job vs persistent) to an option whose values
// are the names in `names`.
template <class O, class E>
OptionSpec opt(E O::*member, OptionSpec spec, std::vector<std::pair<std::string, E>> names) {
  spec.kind = OptionSpec::Kind::Str;
  spec.choices.clear();
  for (auto& [n, e] : names) {
    spec.choices.push_back(n);
    if (spec.def.empty() && e == O{}.*member) spec.def = n;
  }
  spec.owner = &typeid(O);
  spec.store = [member, names](void* o, const std::string& v) {
    for (auto& [n, e] : names)
      if (n == v) static_cast<O*>(o)->*member = e;
  };
  return spec;
}

// The job's options for its adapter, as the adapter's struct O: defaults, then what was given.
template <class O>
O options_of(const Job& job) {
  O o{};
  detail::fill_options(job, detail::spec_of(job).options, typeid(O), &o);
  return o;
}

// The job's op as the adapter's enum (the op was checked against the spec's table when the job
// was expanded). The workload's "mix" is not in the table: keyed adapters test is_mix() first.
template <class E>
E op_of(const Job& job) {
  for (const OpSpec& op : detail::spec_of(job).ops)
    if (op.name == job.op) {
      if (*op.type != typeid(E)) throw std::logic_error("op_of: " + job.op + " is not an op of this enum");
      return static_cast<E>(op.id);
    }
  throw std::logic_error(job.adapter + " has no op '" + job.op + "'");
}
inline bool is_mix(const Job& job) { return job.op == kMixOp; }

// 64M rather than 67108864; 0.999 as it is.
std::string show_count(double v);
// The accepted range of a number option as errors and --help show it: "1 to 64M".
std::string range_text(const OptionSpec& o);
// Throws SetupError "where: name expects ..., got 'v'" when `v` is not of the option's kind,
// range or choices (what expand_jobs checks for every value given).
void check_option_value(const OptionSpec& o, const std::string& v, const std::string& where);
// The value of a secret option (OptionSpec::secret) given as env:VAR (the variable's value) or
// file:PATH (the file's contents, one trailing newline dropped, at most 64 KiB), each line of a
// repeated option (--header) on its own; any other value as it is. Throws SetupError "where:
// name: ..." naming the variable or the file (never a value) when it is unset, empty, unreadable
// or holds a NUL byte.
std::string resolve_secret(const OptionSpec& o, const std::string& v, const std::string& where);

}  // namespace mw
