#pragma once

#include <string>

// A path with every separator written '/', runs of separators collapsed to one and no
// trailing separator (except a lone root "/").
std::string normalize_path(const std::string& path);
