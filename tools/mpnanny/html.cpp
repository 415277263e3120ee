#include <string>

#include "report.h"

namespace mpnanny::query {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_script(const nlohmann::json& data) {
  // ensure_ascii turns U+2028/U+2029 into escapes too; invalid UTF-8 from the database is
  // replaced rather than thrown on.
  const std::string text = data.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  // "<" only ever appears inside JSON strings, where \u003c means the same: no database string
  // can close the <script> element or open a comment.
  for (const char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

/// An embedded script must not contain "</script" (the vendored files do not; this keeps it so).
std::string script_safe(std::string_view code) {
  std::string out(code);
  for (size_t at = out.find("</script"); at != std::string::npos; at = out.find("</script", at + 2)) {
    out.replace(at, 2, "<\\/");
  }
  return out;
}

}  // namespace

std::string render_html(const nlohmann::json& data, const std::string& title) {
  std::string page;
  page.reserve(256 * 1024);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // Opens from disk with no network: nothing may be fetched, and the CSP says so.
  page +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
      "style-src 'unsafe-inline'; img-src data:\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<meta name=\"generator\" content=\"mpnanny report\">\n";
  page += "<title>" + html_escape(title) + "</title>\n";
  // Before anything else runs: count errors so a test (or a reader) can see the page is sound.
  page +=
      "<script>window.__mpnannyErrors=[];window.addEventListener('error',function(e){window.__mpnannyErrors.push("
      "String(e.message));});(function(){var o=console.error;console.error=function(){window.__mpnannyErrors.push("
      "Array.prototype.join.call(arguments,' '));return o.apply(console,arguments);};})();</script>\n";
  page += "<style>\n";
  page += web_asset("uPlot.min.css");
  page += "\n";
  page += web_asset("report.css");
  page += "\n</style>\n</head>\n<body>\n";
  page += "<header><h1 id=\"title\">" + html_escape(title) + "</h1><p id=\"subtitle\"></p></header>\n";
  page += "<main id=\"main\"><noscript>This report draws its charts with JavaScript.</noscript></main>\n";
  page += "<footer>Made by mpnanny. Charts: uPlot 1.6.32 (MIT License, included below).";
  page += "<details><summary>uPlot license</summary><pre>" + html_escape(web_asset("LICENSE")) + "</pre></details>";
  page += "</footer>\n";
  page += "<script id=\"mpnanny-data\" type=\"application/json\">" + json_for_script(data) + "</script>\n";
  page += "<script>\n" + script_safe(web_asset("uPlot.iife.min.js")) + "\n</script>\n";
  page += "<script>\n" + script_safe(web_asset("report.js")) + "\n</script>\n";
  page += "</body>\n</html>\n";
  return page;
}

}  // namespace mpnanny::query
