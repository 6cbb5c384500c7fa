// What several field tables share (tables.cpp, tables_job.cpp, tables_profile.cpp): the
// histogram and latency fields, warnings and notes with their kinds, and the tables of the job's
// parts.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "results/fields.h"
#include "results/notes.h"
#include "results/result.h"
#include "results/results.h"
#include "results/tables.h"
#include "util/histogram.h"

namespace mw::tables {

using fields::Codec;
using fields::Field;
using fields::Fields;
using fields::json;
using fields::Table;
using fields::Up;

inline constexpr const char* kHistogramLayout = "hdr-log-linear";

// Each histogram is rebuilt whole (about 270 kB): more than a run of mwbench holds is refused.
constexpr size_t kMaxHistograms = 4096;

json latency_json(const Histogram& h);
json histogram_json(const Histogram& h);
json latency_schema();
json histogram_schema();
void define_histograms(json& defs);
// The histogram at o[hkey] rebuilt whole, with its exact min, max and sum, or those of the
// latency summary o[skey] beside it in files that predate them; nullptr when there is none
// (the summary alone, when there, is checked).
std::shared_ptr<Histogram> exact(const Reader& rd, const json& o, const std::string& hkey, const std::string& skey,
                                 const std::string& where);
void check_summary(const Reader& rd, const json& v, const std::string& where);

// A histogram as the file holds it: its percentiles under `skey` ("latency_ns": for people and
// scripts) and its buckets under `hkey` ("histogram": enough to merge exactly). `acc(s)` is the
// shared_ptr; written when `written` says so (by default when there is one).
template <class S, class A>
void histogram_pair(std::vector<Field<S>>& out, const std::string& skey, const std::string& hkey, A acc,
                    const std::string& doc, std::function<bool(const S&)> written = nullptr,
                    bool need_histogram = false) {
  if (!written) written = [acc](const S& s) { return acc(s) != nullptr; };
  Field<S> summary;
  summary.key = skey;
  summary.schema = {{"$ref", "#/$defs/latency"}, {"description", doc + ": its percentiles, in ns"}};
  summary.written = written;
  summary.put = [acc](const S& s, const Up&) { return latency_json(*acc(s)); };
  summary.read = [skey](const Reader& rd, const json& o, const std::string& w, S&, const Up&) {
    check_summary(rd, o[skey], Reader::at(w, skey));
  };
  summary.define = define_histograms;
  Field<S> buckets;
  buckets.key = hkey;
  buckets.schema = {{"$ref", "#/$defs/histogram"}, {"description", doc + ": its buckets, exact"}};
  buckets.required = need_histogram;
  buckets.written = written;
  buckets.put = [acc](const S& s, const Up&) { return histogram_json(*acc(s)); };
  buckets.read = [acc, skey, hkey](const Reader& rd, const json& o, const std::string& w, S& s, const Up&) {
    acc(s) = exact(rd, o, hkey, skey, w);
  };
  buckets.merge = [acc](S& into, const S& part, const fields::Merging& m) {
    if (!acc(part)) return;
    if (!acc(into)) acc(into) = std::make_shared<Histogram>();
    uint64_t n = acc(into)->count();
    m.add(n, acc(part)->count(), "histogram counts");
    acc(into)->merge(*acc(part));
  };
  out.push_back(std::move(summary));
  out.push_back(std::move(buckets));
}

// A list of warnings as the file holds them: "warnings" (the texts, for people and scripts) and,
// when there are any, "warning_kinds" (one a warning, in order: what readers decide by). A kind
// this mwbench does not know (a newer one's) is read as "other"; a file without kinds gets them
// from the warnings' words (legacy_warning_kind).
template <class S, class A>
void warning_pair(std::vector<Field<S>>& out, A acc);
// A list of notes: "notes" (the texts) and "note_kinds" (one a note, in order), both always (a
// file without them was written before notes were: its loader makes them from the figures).
template <class S, class A>
void note_pair(std::vector<Field<S>>& out, A acc);

WarningKind legacy_warning_kind(std::string_view text);
json kinds_schema(const char* what, const std::vector<const char*>& names);
std::vector<const char*> warning_kind_list();
std::vector<const char*> note_kind_list();

template <class S, class A>
void warning_pair(std::vector<Field<S>>& out, A acc) {
  Field<S> texts;
  texts.key = "warnings";
  texts.schema = {{"type", "array"},
                  {"items", {{"type", "string"}}},
                  {"description", "what makes a figure suspect, in words (warning_kinds says what each is about)"}};
  texts.put = [acc](const S& s, const Up&) {
    json a = json::array();
    for (const Warning& w : acc(s)) a.push_back(w.text);
    return a;
  };
  texts.read = [acc](const Reader& rd, const json& o, const std::string& w, S& s, const Up&) {
    std::vector<Warning>& got = acc(s);
    got.clear();
    for (std::string& text : rd.strings(o["warnings"], Reader::at(w, "warnings")))
      got.push_back({legacy_warning_kind(text), std::move(text)});
    if (!o.contains("warning_kinds")) return;
    const std::string kw = Reader::at(w, "warning_kinds");
    const json& kinds = rd.array(o["warning_kinds"], kw);
    if (kinds.size() != got.size())
      rd.fail(kw, std::to_string(kinds.size()) + " kinds for " + std::to_string(got.size()) + " warnings");
    for (size_t i = 0; i < kinds.size(); ++i)
      got[i].kind = parse_warning_kind(rd.string(kinds[i], Reader::item(kw, i))).value_or(WarningKind::Other);
  };
  texts.redact = [acc](S& s, const fields::Redactor& r) {
    for (Warning& w : acc(s)) r.text(w.text);
  };
  Field<S> kinds;
  kinds.key = "warning_kinds";
  kinds.schema = kinds_schema("warning", warning_kind_list());
  kinds.written = [acc](const S& s) { return !acc(s).empty(); };
  kinds.put = [acc](const S& s, const Up&) {
    json a = json::array();
    for (const Warning& w : acc(s)) a.push_back(warning_kind_name(w.kind));
    return a;
  };
  out.push_back(std::move(texts));
  out.push_back(std::move(kinds));
}

template <class S, class A>
void note_pair(std::vector<Field<S>>& out, A acc) {
  Field<S> texts;
  texts.key = "notes";
  texts.schema = {{"type", "array"},
                  {"items", {{"type", "string"}}},
                  {"description", "the lines under the tables, in words (note_kinds says what each is about)"}};
  texts.put = [acc](const S& s, const Up&) {
    json a = json::array();
    for (const Note& n : acc(s)) a.push_back(n.text);
    return a;
  };
  texts.read = [acc](const Reader& rd, const json& o, const std::string& w, S& s, const Up&) {
    std::vector<Note>& got = acc(s);
    got.clear();
    for (std::string& text : rd.strings(o["notes"], Reader::at(w, "notes")))
      got.push_back({NoteKind::Other, std::move(text)});
    const std::string kw = Reader::at(w, "note_kinds");
    const json& kinds = rd.array(rd.need(o, "note_kinds", w), kw);
    if (kinds.size() != got.size())
      rd.fail(kw, std::to_string(kinds.size()) + " kinds for " + std::to_string(got.size()) + " notes");
    for (size_t i = 0; i < kinds.size(); ++i)
      got[i].kind = parse_note_kind(rd.string(kinds[i], Reader::item(kw, i))).value_or(NoteKind::Other);
  };
  texts.redact = [acc](S& s, const fields::Redactor& r) {
    for (Note& n : acc(s)) r.text(n.text);
  };
  Field<S> kinds;
  kinds.key = "note_kinds";
  kinds.schema = kinds_schema("note", note_kind_list());
  kinds.put = [acc](const S& s, const Up&) {
    json a = json::array();
    for (const Note& n : acc(s)) a.push_back(note_kind_name(n.kind));
    return a;
  };
  out.push_back(std::move(texts));
  out.push_back(std::move(kinds));
}

// The tables of a job's parts (tables_parts.cpp).
const Table<DurabilityResult>& durability_table();
const Table<Capacity>& capacity_table();
const Table<queue::Figures>& queue_table();
const Table<JobResult>& series_table();
const Table<JobResult>& connect_table();
const Table<SloOutcome>& slo_table();
Codec<std::optional<Contract>> contract_codec();
Codec<Metrics> metrics_codec();
Codec<std::vector<EventTrack>> events_codec();
const Table<Episode>& episode_table();
const Table<FaultResult>& fault_table();

}  // namespace mw::tables
