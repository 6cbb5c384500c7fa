// The one renderer of the terminal tables (src/report/text_table.h).
#include <doctest/doctest.h>

#include "report/text_table.h"

using namespace mw;

TEST_CASE("text table: columns padded to display width, numbers right, no trailing blanks") {
  std::vector<std::vector<std::string>> rows = {
      {"name", "req/s", "note"}, {"caf\u00e9", "12", "\u2588\u2588"}, {"x", "1234", ""}};
  std::string t = render_table(rows, [](size_t i) { return i != 1; });
  CHECK(t ==
        "name  req/s  note\n"
        "caf\u00e9     12  \u2588\u2588\n"
        "x      1234\n");
  CHECK(display_width("caf\u00e9") == 4);
  CHECK(render_table({}, [](size_t) { return true; }).empty());
}
