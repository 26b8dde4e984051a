#include "normalize_path.hpp"

namespace {

bool is_separator(char ch) { return ch == '/'; }

}  // namespace

std::string normalize_path(const std::string& path) {
    std::string out;
    out.reserve(path.size());
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        const char ch = path[i] == '\\' ? '/' : path[i];
        if (is_separator(ch) && !out.empty() && is_separator(out.back())) {
            continue;  // collapse a run of separators
        }
        out.push_back(ch);
    }
    if (!path.empty()) {
        out.push_back(path.back());
    }
    if (out.size() > 1 && is_separator(out.back())) {
        out.pop_back();
    }
    return out;
}
