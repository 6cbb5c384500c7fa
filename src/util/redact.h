// Secrets never reach a terminal, a result file, a report, the live metrics or the process list.
// The one redaction rule lives here: whatever is written, printed or served about a run passes
// through it (redact_result and redact_for for a run's figures, messages, job names and targets,
// redact_command_line for `command`, redact_args for mwbench's own argv, redact for option values).
#pragma once
#include <string>
#include <vector>

namespace mw {

// Text with URLs in it, each without its "user:password@" (with a scheme or without one:
// "u:p@host:5984/db"); other text unchanged.
std::string redact_url(const std::string& text);
// Free text (a message, a command, a server's log line): URLs as redact_url, and the value of
// password=..., token=..., "Authorization: ..." and the like replaced by ***. A value ends where
// libpq's conninfo grammar ends it (quoted, or at whitespace); when what follows is neither the
// end of the line nor another key=value pair ("password=abc def"), the rest of the line is masked.
std::string redact_text(const std::string& text);
// A libpq conninfo (--pg-conninfo, --conninfo) read by libpq's grammar (conninfo.h): secret
// values (password, sslpassword, ...) masked; when libpq would refuse it (a word without '=', an
// unterminated quote, an unknown keyword) after a secret, everything from that secret on. A
// postgresql:// URI as redact_text.
std::string redact_conninfo(const std::string& text);
// The secret values of a conninfo, to be masked wherever a server echoes them (libpq's
// `missing "=" after "def"`): each secret as read and as written, and, when the grammar fails
// after a secret, each word from the fault on.
std::vector<std::string> conninfo_secrets(const std::string& text);
// "env:VAR" or "file:PATH": where an option's secret is (options.h, resolve_secret), not the secret.
bool is_secret_reference(const std::string& value);
// What may be shown of an option's value: all of it masked for secret options (*password*,
// *secret*, *token*), secret headers' values masked (--header), credentials removed from
// URLs and conninfo strings otherwise. Options naming an environment variable (*-env) are
// not secrets, nor is a reference to one (is_secret_reference).
std::string redact(const std::string& key, const std::string& value);
// Each argument as it may be shown: --key=value and --key value both redacted per key.
std::vector<std::string> redact_args(const std::vector<std::string>& args);
// The command line as it may be recorded: redact_args, arguments with spaces or shell characters
// quoted.
std::string redact_command_line(const std::vector<std::string>& args);

}  // namespace mw
