// Bytes from outside (server replies, error samples, job names, server info, file names) on
// their way into the JSON, the terminal and the HTML: one place that makes them safe.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace mw {

// Well-formed UTF-8: every byte that does not belong to a valid sequence (overlong, surrogate,
// above U+10FFFF, cut short) becomes U+FFFD.
std::string valid_utf8(std::string_view s);
// For the terminal: valid UTF-8 with control characters (C0, DEL, C1) shown as \n, \t, \r, \xNN
// or \u00NN, and bidirectional formatting characters (U+202E, ...) as \uNNNN, so that no byte
// from outside can move the cursor, clear the screen or reorder what is shown around it.
std::string printable(std::string_view s);
// For HTML and SVG text and attributes: valid UTF-8, control characters as in printable(),
// and < > & " escaped.
std::string html_text(std::string_view s);
// For roff (the manual page): valid UTF-8 with characters beyond ASCII as \[uXXXX], backslashes,
// hyphens and double quotes escaped, a '.' or '\'' that starts a line made text, control characters
// shown as in printable().
std::string roff_text(std::string_view s);
// How deeply JSON text nests its arrays and objects (brackets in strings not counted): checked
// before a parser builds an untrusted file.
int json_depth(std::string_view t);
// Every string and object key in `j` made valid UTF-8 (dump() then cannot throw).
void sanitize_json(nlohmann::json& j);
// A number with `decimals` decimals ("%.*f").
std::string fmt(double v, int decimals);
// The shortest of printf's %g (6 significant digits): 0.99, 2.6774, 1e-05.
std::string fmt_g(double v);
// A whole number with thousands separated: "1,640".
std::string grouped(double v);

}  // namespace mw
