// Shared by the seeded model tests (tests/unit/*_model_test.cpp): REQUIRE
// costs more than the operation under test, so millions of checks use this
// instead, which prints the failing step with the message.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>

// The step the model test is at; set it before each operation.
inline std::size_t g_model_op = 0;

#define MODEL_REQUIRE(cond)                                  \
  do {                                                       \
    if (!(cond)) FAIL(#cond << " at op " << g_model_op);     \
  } while (0)
