#include "normalize_path.hpp"

std::string normalize_path(const std::string& path) {
    std::string out;
    out.reserve(path.size());
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        const char ch = path[i] == '\\' ? '/' : path[i];
        if (ch == '/' && !out.empty() && out.back() == '/') {
            continue;  // collapse a run of separators
        }
        out.push_back(ch);
    }
    if (!path.empty()) {
        out.push_back(path.back());
    }
    if (out.size() > 1 && out.back() == '/') {
        out.pop_back();
    }
    return out;
}
