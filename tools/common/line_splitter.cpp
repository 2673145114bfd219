#include "line_splitter.hpp"

namespace dshpty::tool {

void LineSplitter::emit(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (handlers_.line) handlers_.line(line);
}

void LineSplitter::feed(std::string_view bytes) {
  while (!bytes.empty() && !stopped_) {
    const std::size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (discarding_) {
      // Still inside an overlong line: drop up to its end.
    } else if (partial_.size() + piece.size() > max_) {
      discarding_ = true;
      partial_.clear();
      partial_.shrink_to_fit();
    } else {
      partial_.append(piece);
    }
    if (newline == std::string_view::npos) return;
    bytes.remove_prefix(newline + 1);
    if (discarding_) {
      discarding_ = false;
      if (handlers_.overlong) handlers_.overlong();
    } else {
      std::string line;
      line.swap(partial_);
      emit(line);
    }
  }
}

void LineSplitter::finish() {
  if (stopped_) return;
  if (discarding_) {
    discarding_ = false;
    if (handlers_.overlong) handlers_.overlong();
  } else if (!partial_.empty()) {
    std::string line;
    line.swap(partial_);
    emit(line);
  }
}

}  // namespace dshpty::tool
