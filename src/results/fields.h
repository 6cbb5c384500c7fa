// One declarative table of fields per struct of the result model (tables.h) drives the result
// file's writer, its reader and every check of it, the merge of runs (each field's rule), the
// redaction (which fields are free text) and the file's JSON Schema. A field is its key, a codec
// (its value's JSON, its check and its schema) and its rules; a table lists a struct's fields
// in the order the reader checks them. Adding a field to the file is one line in its table.
#pragma once
#include <climits>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "results/reader.h"
#include "util/names.h"

namespace mw::fields {

using nlohmann::json;

// Where a value sits while it is written or read: the struct that holds it, that struct's index
// in its array, and the struct that holds that (a process's figures per op need its profile's
// ops, a series interval its index and its job's time).
struct Up {
  const Up* up = nullptr;
  const void* object = nullptr;
  size_t index = 0;
  template <class T>
  const T& as() const {
    return *static_cast<const T*>(object);
  }
};

// The parts of one run merged (merge.cpp): sums that no longer fit are refused, naming the job.
struct Merging {
  std::string job;
  size_t part = 0;  // which part is being added: the first sets what the others do not change
  void add(uint64_t& a, uint64_t b, const std::string& what) const;
  void add(int& a, int64_t b, const std::string& what) const;
  void add(double& a, double b, const std::string&) const { a += b; }
};

// Free text on its way to a file (redact_result): `text` for words, `keyed` for a value under
// its key (an option's, a server fact's: redact() knows which keys hold secrets).
struct Redactor {
  std::function<void(std::string&)> text;
  std::function<void(const std::string& key, std::string&)> keyed;
};

// A value's JSON: how it is written, read and checked, and its JSON Schema. `redact` and `merge`
// reach into a struct (an object codec): its table's rules.
template <class T>
struct Codec {
  json schema;
  std::function<json(const T&, const Up& owner, size_t index)> put;
  std::function<void(const Reader&, const json&, const std::string& where, T&, const Up& owner, size_t index)> get;
  std::function<void(T&, const Redactor&)> redact = nullptr;
  std::function<void(T&, const T&, const Merging&)> merge = nullptr;
  std::function<void(json& defs)> define = nullptr;  // the $defs its schema refers to
};

template <class S>
struct Field {
  std::string key;
  json schema;
  bool required = false;                              // a file without it is refused
  std::function<bool(const S&)> written;              // null: always
  std::function<json(const S&, const Up& self)> put;  // null: another field writes it
  // Reads the field from its object `o` (at `where`) into `s`; called when `o` holds the key, or
  // for every object when `always` (a field with what files of before lacked made up).
  std::function<void(const Reader&, const json& o, const std::string& where, S&, const Up& self)> read;
  bool always = false;
  std::function<void(S& into, const S& part, const Merging&)> merge;  // null: made again after
  std::function<void(S&, const Redactor&)> redact;                    // null: not free text
  std::function<void(json& defs)> define;
};

template <class S>
struct Table {
  std::string name, doc;
  std::vector<Field<S>> fields = {};
  json extra = json::object();  // more of the JSON Schema (params: what else it may hold)
  // After the fields: checks across them, and what files of before lack made from what they hold.
  std::function<void(const Reader&, const json& o, const std::string& where, S&, const Up& self)> after = nullptr;

  json write(const S& s, const Up& self) const {
    json o = json::object();
    for (const Field<S>& f : fields)
      if (f.put && (!f.written || f.written(s))) o[f.key] = f.put(s, self);
    return o;
  }
  void read(const Reader& rd, const json& v, const std::string& where, S& s, const Up& self) const {
    rd.object(v, where);
    for (const Field<S>& f : fields) {
      if (!f.read) continue;
      if (v.contains(f.key) || f.always)
        f.read(rd, v, where, s, self);
      else if (f.required)
        rd.fail(where, "missing \"" + f.key + "\"");
    }
    if (after) after(rd, v, where, s, self);
  }
  void merge(S& into, const S& part, const Merging& m) const {
    for (const Field<S>& f : fields)
      if (f.merge) f.merge(into, part, m);
  }
  void redact(S& s, const Redactor& r) const {
    for (const Field<S>& f : fields)
      if (f.redact) f.redact(s, r);
  }
  // {"type": "object", "properties": ..., "required": [...]} and the $defs of its fields' tables.
  json schema(json& defs) const {
    json props = json::object(), need = json::array();
    for (const Field<S>& f : fields) {
      props[f.key] = f.schema;
      if (f.required) need.push_back(f.key);
      if (f.define) f.define(defs);
    }
    json out = {{"type", "object"}, {"description", doc}, {"properties", props}, {"additionalProperties", false}};
    if (!need.empty()) out["required"] = need;
    out.update(extra);
    return out;
  }
};

// ---- codecs of plain values ------------------------------------------------------------------

inline json described(json schema, const std::string& doc) {
  if (!doc.empty()) schema["description"] = doc;
  return schema;
}

template <class T>
Codec<T> plain(json schema, std::function<T(const Reader&, const json&, const std::string&)> check) {
  return {
      std::move(schema), [](const T& v, const Up&, size_t) { return json(v); },
      [check](const Reader& rd, const json& j, const std::string& w, T& v, const Up&, size_t) { v = check(rd, j, w); }};
}

inline Codec<std::string> text() {
  return plain<std::string>({{"type", "string"}},
                            [](const Reader& rd, const json& j, const std::string& w) { return rd.string(j, w); });
}
inline Codec<bool> boolean() {
  return plain<bool>({{"type", "boolean"}},
                     [](const Reader& rd, const json& j, const std::string& w) { return rd.boolean(j, w); });
}
// A count: a whole number from 0 to 1e15.
inline Codec<uint64_t> count() {
  return plain<uint64_t>({{"type", "integer"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}},
                         [](const Reader& rd, const json& j, const std::string& w) { return rd.count(j, w); });
}
// A whole number in [lo, hi], held in an I.
template <class I>
Codec<I> whole(int64_t lo, int64_t hi) {
  return plain<I>({{"type", "integer"}, {"minimum", lo}, {"maximum", hi}},
                  [lo, hi](const Reader& rd, const json& j, const std::string& w) {
                    return static_cast<I>(rd.whole(j, w, lo, hi));
                  });
}
// A figure: a finite number from 0 to 1e15.
inline Codec<double> figure() {
  return plain<double>({{"type", "number"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}},
                       [](const Reader& rd, const json& j, const std::string& w) { return rd.figure(j, w); });
}
// Any unsigned 64-bit word.
inline Codec<uint64_t> word() {
  return plain<uint64_t>({{"type", "integer"}, {"minimum", 0}, {"maximum", std::numeric_limits<uint64_t>::max()}},
                         [](const Reader& rd, const json& j, const std::string& w) { return rd.word(j, w); });
}
// One of an enum's names.
template <class E>
Codec<E> choice(Names<E> names) {
  json all = json::array();
  for (const char* n : names.all) all.push_back(n);
  return {{{"type", "string"}, {"enum", all}},
          [names](const E& e, const Up&, size_t) { return json(names(e)); },
          [names](const Reader& rd, const json& j, const std::string& w, E& e, const Up&, size_t) {
            e = rd.choice(j, w, names);
          }};
}
// A figure, or null for "not known" (held as -1).
inline Codec<double> figure_or_null() {
  return {{{"anyOf", {{{"type", "number"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}}, {{"const", nullptr}}}}},
          [](const double& v, const Up&, size_t) { return v >= 0 ? json(v) : json(nullptr); },
          [](const Reader& rd, const json& j, const std::string& w, double& v, const Up&, size_t) {
            v = j.is_null() ? -1 : rd.figure(j, w);
          }};
}

// ---- codecs of containers --------------------------------------------------------------------

// An array of values of one codec.
template <class T>
Codec<std::vector<T>> array(Codec<T> c) {
  Codec<std::vector<T>> out;
  out.schema = {{"type", "array"}, {"items", c.schema}};
  out.put = [c](const std::vector<T>& v, const Up& owner, size_t) {
    json a = json::array();
    for (size_t k = 0; k < v.size(); ++k) a.push_back(c.put(v[k], owner, k));
    return a;
  };
  out.get = [c](const Reader& rd, const json& j, const std::string& w, std::vector<T>& v, const Up& owner, size_t) {
    rd.array(j, w);
    v.clear();
    v.resize(j.size());
    for (size_t k = 0; k < j.size(); ++k) c.get(rd, j[k], Reader::item(w, k), v[k], owner, k);
  };
  if (c.redact)
    out.redact = [c](std::vector<T>& v, const Redactor& r) {
      for (T& x : v) c.redact(x, r);
    };
  out.define = c.define;
  return out;
}
// An object of values of one codec by name (a std::map).
template <class T>
Codec<std::map<std::string, T>> map_of(Codec<T> c) {
  Codec<std::map<std::string, T>> out;
  out.schema = {{"type", "object"}, {"additionalProperties", c.schema}};
  out.put = [c](const std::map<std::string, T>& m, const Up& owner, size_t) {
    json o = json::object();
    for (auto& [k, x] : m) o[k] = c.put(x, owner, 0);
    return o;
  };
  out.get = [c](const Reader& rd, const json& j, const std::string& w, std::map<std::string, T>& m, const Up& owner,
                size_t) {
    for (auto& [k, x] : rd.object(j, w).items()) c.get(rd, x, w + "." + printable(k), m[k], owner, 0);
  };
  out.define = c.define;
  return out;
}
inline Codec<std::vector<std::string>> strings() { return array(text()); }
inline Codec<std::map<std::string, std::string>> texts() { return map_of(text()); }

// A struct of its own table: an object, its fields checked, its rules applied within.
template <class T>
Codec<T> object(const Table<T>& t) {
  Codec<T> out;
  out.schema = {{"$ref", "#/$defs/" + t.name}};
  out.put = [&t](const T& v, const Up& owner, size_t k) { return t.write(v, Up{&owner, &v, k}); };
  out.get = [&t](const Reader& rd, const json& j, const std::string& w, T& v, const Up& owner, size_t k) {
    t.read(rd, j, w, v, Up{&owner, &v, k});
  };
  out.redact = [&t](T& v, const Redactor& r) { t.redact(v, r); };
  out.merge = [&t](T& into, const T& part, const Merging& m) { t.merge(into, part, m); };
  out.define = [&t](json& defs) {
    if (defs.contains(t.name)) return;
    defs[t.name] = json::object();  // before its fields: a table that holds itself (a job's repeats)
    defs[t.name] = t.schema(defs);
  };
  return out;
}
// A list of structs that the file keys by one of their fields: {"read": {...}, "write": {...}}.
template <class T>
Codec<std::vector<T>> keyed(std::string T::*name, Codec<T> c) {
  Codec<std::vector<T>> out;
  out.schema = {{"type", "object"}, {"additionalProperties", c.schema}};
  out.put = [name, c](const std::vector<T>& v, const Up& owner, size_t) {
    json o = json::object();
    for (size_t k = 0; k < v.size(); ++k) o[v[k].*name] = c.put(v[k], owner, k);
    return o;
  };
  out.get = [name, c](const Reader& rd, const json& j, const std::string& w, std::vector<T>& v, const Up& owner,
                      size_t) {
    for (auto& [k, x] : rd.object(j, w).items()) {
      T item{};
      item.*name = k;
      c.get(rd, x, w + "." + printable(k), item, owner, v.size());
      v.push_back(std::move(item));
    }
  };
  out.redact = c.redact
                   ? std::function<void(std::vector<T>&, const Redactor&)>([c](std::vector<T>& v, const Redactor& r) {
                       for (T& x : v) c.redact(x, r);
                     })
                   : nullptr;
  out.define = c.define;
  return out;
}
// A value held behind a shared_ptr (a queue's figures, a capacity search): written when there.
template <class T, class P = std::shared_ptr<const T>>
Codec<P> shared(Codec<T> c) {
  Codec<P> out;
  out.schema = c.schema;
  out.put = [c](const P& p, const Up& owner, size_t k) { return c.put(*p, owner, k); };
  out.get = [c](const Reader& rd, const json& j, const std::string& w, P& p, const Up& owner, size_t k) {
    auto v = std::make_shared<T>();
    c.get(rd, j, w, *v, owner, k);
    p = std::move(v);
  };
  out.define = c.define;
  return out;
}

// ---- fields ----------------------------------------------------------------------------------

// A field built from an accessor (the member, or where in the struct the value is), its codec
// and its rules, chained: field("ops_ok", &JobResult::ops_ok, count()).need().sum().
template <class S, class T, class A>
class FieldOf {
 public:
  // NOLINTNEXTLINE(performance-unnecessary-value-param): moved (clang-tidy 14 misreads it in a template)
  FieldOf(std::string key, A acc, Codec<T> c) : acc_(acc), codec_(c) {
    f_.key = std::move(key);
    f_.schema = c.schema;
    f_.put = [acc, c](const S& s, const Up& self) { return c.put(acc(s), self, 0); };
    f_.read = [acc, c, k = f_.key](const Reader& rd, const json& o, const std::string& w, S& s, const Up& self) {
      c.get(rd, o[k], Reader::at(w, k), acc(s), self, 0);
    };
    if (c.redact) f_.redact = [acc, c](S& s, const Redactor& r) { c.redact(acc(s), r); };
    f_.define = c.define;
  }
  // The reader refuses a file without it.
  FieldOf& need() {
    f_.required = true;
    return *this;
  }
  // The writer writes it only when `p` holds (what a run without it has no use for).
  FieldOf& when(std::function<bool(const S&)> p) {
    f_.written = std::move(p);
    return *this;
  }
  FieldOf& doc(const std::string& d) {
    f_.schema = described(f_.schema, d);
    return *this;
  }
  // Free text: the redaction rule passes over it (a string, or each of a list's).
  FieldOf& free_text() {
    A acc = acc_;
    if constexpr (std::is_same_v<T, std::string>)
      f_.redact = [acc](S& s, const Redactor& r) { r.text(acc(s)); };
    else if constexpr (std::is_same_v<T, std::vector<std::string>>)
      f_.redact = [acc](S& s, const Redactor& r) {
        for (std::string& x : acc(s)) r.text(x);
      };
    else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>)
      f_.redact = [acc](S& s, const Redactor& r) {
        for (auto& [k, x] : acc(s)) r.keyed(k, x);
      };
    return *this;
  }

  // Merge rules: how the parts' values make the merged one (a field without one is the first
  // part's, or made again from the merged figures after).
  FieldOf& sum() {
    A acc = acc_;
    f_.merge = [acc, k = f_.key](S& into, const S& part, const Merging& m) { m.add(acc(into), acc(part), k); };
    return *this;
  }
  FieldOf& max() {
    A acc = acc_;
    f_.merge = [acc](S& into, const S& part, const Merging&) { acc(into) = std::max(acc(into), acc(part)); };
    return *this;
  }
  FieldOf& first() {  // the first part's
    A acc = acc_;
    f_.merge = [acc](S& into, const S& part, const Merging& m) {
      if (m.part == 0) acc(into) = acc(part);
    };
    return *this;
  }
  FieldOf& any() {  // true when any part's is
    A acc = acc_;
    f_.merge = [acc](S& into, const S& part, const Merging&) { acc(into) = acc(into) || acc(part); };
    return *this;
  }
  // Each value once, in the order first seen, at most `most` of them.
  FieldOf& unique(size_t most = SIZE_MAX) {
    A acc = acc_;
    f_.merge = [acc, most](S& into, const S& part, const Merging&) {
      for (auto& x : acc(part))
        if (acc(into).size() < most && std::find(acc(into).begin(), acc(into).end(), x) == acc(into).end())
          acc(into).push_back(x);
    };
    return *this;
  }
  // The parts' structs merged by their own table's rules.
  FieldOf& nested() {
    A acc = acc_;
    Codec<T> c = codec_;
    f_.merge = [acc, c](S& into, const S& part, const Merging& m) { c.merge(acc(into), acc(part), m); };
    return *this;
  }
  // A rule of its own.
  FieldOf& merge(std::function<void(S&, const S&, const Merging&)> fn) {
    f_.merge = std::move(fn);
    return *this;
  }

  operator Field<S>() const { return f_; }

 private:
  Field<S> f_;
  A acc_;
  Codec<T> codec_;
};

template <class S>
struct Fields {
  // A member.
  template <class T>
  static auto field(std::string key, T S::*m, Codec<T> c) {
    auto acc = [m](auto& s) -> auto& { return s.*m; };
    return FieldOf<S, T, decltype(acc)>(std::move(key), acc, std::move(c));
  }
  // A value elsewhere in the struct: `acc(s)` is it (a job's name is its Job's).
  template <class T, class A>
  static auto field(std::string key, A acc, Codec<T> c) {
    return FieldOf<S, T, A>(std::move(key), acc, std::move(c));
  }
  // A figure the writer works out from the struct (a job's mb_per_s): written, and checked when
  // read (nothing is kept: it is worked out again).
  template <class T>
  // NOLINTNEXTLINE(performance-unnecessary-value-param): moved (clang-tidy 14 misreads it in a template)
  static Field<S> made(std::string key, std::function<T(const S&, const Up&)> fn, Codec<T> c, bool need = false) {
    Field<S> f;
    f.key = std::move(key);
    f.schema = c.schema;
    f.required = need;
    f.put = [fn, c](const S& s, const Up& self) { return c.put(fn(s, self), self, 0); };
    f.read = [c, k = f.key](const Reader& rd, const json& o, const std::string& w, S&, const Up& self) {
      T scratch{};
      c.get(rd, o[k], Reader::at(w, k), scratch, self, 0);
    };
    f.define = c.define;
    return f;
  }
  // A field of its own: its schema, writer and reader.
  // NOLINTNEXTLINE(performance-unnecessary-value-param): moved (clang-tidy 14 misreads it in a template)
  static Field<S> custom(std::string key, json schema, std::function<json(const S&, const Up&)> put,
                         std::function<void(const Reader&, const json&, const std::string&, S&, const Up&)> read) {
    Field<S> f;
    f.key = std::move(key);
    f.schema = std::move(schema);
    f.put = std::move(put);
    f.read = std::move(read);
    return f;
  }
};

}  // namespace mw::fields
