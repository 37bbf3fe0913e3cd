// train_gpt --version: the commit the binary was built from and, for each GPU library, the version it was
// built with and the one loaded now. Needs no GPU: without a driver it says so, and the rest still prints.
#pragma once
#include <string>

// The report, several lines ending in '\n'; `commit` as the build recorded it (git describe, or "unknown").
std::string version_report(const std::string& commit);
