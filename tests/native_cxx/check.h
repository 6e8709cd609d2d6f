// A tiny test harness for the native core's C++ tests (no framework): CHECK
// records a failure with its file and line and goes on; TEST registers a test
// function; run_all() runs them and prints "all passed" when none failed.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace check {

struct Registry {
  std::vector<std::pair<std::string, std::function<void()>>> tests;
  int failures = 0;
  static Registry& get() {
    static Registry registry;
    return registry;
  }
};

struct Register {
  Register(const char* name, std::function<void()> fn) { Registry::get().tests.emplace_back(name, std::move(fn)); }
};

inline void fail(const char* file, int line, const std::string& what) {
  ++Registry::get().failures;
  std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
}

// Runs every test; returns the process exit status (0 when all passed).
inline int run_all() {
  Registry& registry = Registry::get();
  for (auto& [name, fn] : registry.tests) {
    const int before = registry.failures;
    try {
      fn();
    } catch (const std::exception& error) {
      fail(name.c_str(), 0, std::string("uncaught exception: ") + error.what());
    }
    std::printf("%s %s\n", registry.failures == before ? "ok  " : "FAIL", name.c_str());
  }
  if (registry.failures) {
    std::printf("%d check(s) failed\n", registry.failures);
    return 1;
  }
  std::printf("native tests: all passed (%zu tests)\n", registry.tests.size());
  return 0;
}

}  // namespace check

#define CHECK(condition)                                           \
  do {                                                             \
    if (!(condition)) check::fail(__FILE__, __LINE__, #condition); \
  } while (0)

#define CHECK_EQ(a, b)                                                                                            \
  do {                                                                                                            \
    const auto check_a_ = (a);                                                                                    \
    const auto check_b_ = (b);                                                                                    \
    if (!(check_a_ == check_b_)) {                                                                                \
      check::fail(__FILE__, __LINE__,                                                                             \
                  std::string(#a " == " #b ": ") + std::to_string(check_a_) + " != " + std::to_string(check_b_)); \
    }                                                                                                             \
  } while (0)

#define CHECK_THROWS(statement)                                                          \
  do {                                                                                   \
    bool check_threw_ = false;                                                           \
    try {                                                                                \
      statement;                                                                         \
    } catch (const std::exception&) {                                                    \
      check_threw_ = true;                                                               \
    }                                                                                    \
    if (!check_threw_) check::fail(__FILE__, __LINE__, "no exception from " #statement); \
  } while (0)

#define CHECK_CONCAT_(a, b) a##b
#define CHECK_CONCAT(a, b) CHECK_CONCAT_(a, b)
#define TEST(name)                                                                \
  static void name();                                                             \
  static const check::Register CHECK_CONCAT(check_register_, name)(#name, &name); \
  static void name()
