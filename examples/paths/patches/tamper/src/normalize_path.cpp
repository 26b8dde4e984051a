#include "normalize_path.hpp"

std::string normalize_path(const std::string& path) {
    std::string out;
    out.reserve(path.size());
    for (const char raw : path) {
        const char ch = raw == '\\' ? '/' : raw;
        if (ch == '/' && !out.empty() && out.back() == '/') {
            continue;  // collapse a run of separators
        }
        out.push_back(ch);
    }
    if (out.size() > 1 && out.back() == '/') {
        out.pop_back();
    }
    return out;
}
