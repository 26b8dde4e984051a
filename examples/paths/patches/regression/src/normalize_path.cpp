#include "normalize_path.hpp"

std::string normalize_path(const std::string& path) {
    std::string in = path;
    if (in.size() > 1 && (in.back() == '/' || in.back() == '\\')) {
        in.pop_back();  // no trailing separator
    }
    std::string out;
    out.reserve(in.size());
    for (const char raw : in) {
        const char ch = raw == '\\' ? '/' : raw;
        if (ch == '/' && !out.empty() && out.back() == '/') {
            continue;  // collapse a run of separators
        }
        out.push_back(ch);
    }
    return out;
}
