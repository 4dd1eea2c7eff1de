#include "sim/core/suggest.hpp"

#include <catch2/catch.hpp>

using namespace ipusim::core;

TEST_CASE("a misspelt key suggests the closest known key") {
  const std::vector<std::string> keys = {"gradient_accumulation_count", "repeat_count",
                                         "micro_batch_size"};
  CHECK(did_you_mean("gradient_acumulation_count", keys) ==
        "; did you mean 'gradient_accumulation_count'?");
  CHECK(did_you_mean("repeat_cont", keys) == "; did you mean 'repeat_count'?");
}

TEST_CASE("a word unlike every candidate gets no suggestion") {
  CHECK(did_you_mean("xyzzy", {"grouped", "interleaved"}).empty());
}

TEST_CASE("a word that lengthens or shortens one candidate suggests it") {
  const std::vector<std::string> formats = {"json", "proto"};
  // Three letters apart from "proto", too many for the edit distance of an eight-letter word.
  CHECK(did_you_mean("protobuf", formats) == "; did you mean 'proto'?");
  CHECK(did_you_mean("JSONL", formats) == "; did you mean 'json'?");
  CHECK(did_you_mean("pro", {"proto", "json"}) == "; did you mean 'proto'?");
  // Two candidates that the word starts: neither is the one.
  CHECK(did_you_mean("protobuf_v2_long_form", {"proto", "protobuf_v2"}).empty());
  // Fewer than three letters in common is not a relation.
  CHECK(did_you_mean("jsonnet", {"js", "proto"}).empty());
}

TEST_CASE("lists of allowed values are quoted and joined with commas and 'or'") {
  CHECK(quoted_list({"a", "b", "c"}) == "'a', 'b' or 'c'");
  CHECK(quoted_list({"a"}) == "'a'");
}
