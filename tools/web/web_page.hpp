// The page's own files, built into the program: its HTML (the token goes into its links),
// script and style. xterm.js itself is read from the npm package at run time.
#pragma once

#include <string>
#include <string_view>

namespace dshpty::web {

std::string page_html(std::string_view token);
std::string_view page_script();
std::string_view page_style();

}  // namespace dshpty::web
