#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim::testing;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// The cells of a CSV line without quotes (the planner's numeric cells have none).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.push_back(std::exchange(cell, ""));
    else
      cell += c;
  }
  out.push_back(cell);
  return out;
}

}  // namespace

TEST_CASE("plan writes a best config that run accepts with the planner's throughput") {
  const auto best = fresh_output("plan_test", "best.json");
  const auto csv = fresh_output("plan_test", "plan.csv");
  const auto plan = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "8,16", "-o", best,
                                "--csv", csv, "--jobs", "2"});
  REQUIRE(plan.code == 0);
  CHECK(plan.err.empty());
  const auto report = fresh_output("plan_test", "run.json");
  const auto run = run_ipusim({"run", best, "--no-numeric", "--json", report});
  REQUIRE(run.code == 0);
  const auto json = nlohmann::json::parse(read_file(report));
  const auto rows = lines(read_file(csv));
  REQUIRE(rows.size() > 1);
  const auto header = cells(rows[0]);
  const auto first = cells(rows[1]);
  const auto column = std::find(header.begin(), header.end(), "throughput_samples_per_second");
  REQUIRE(column != header.end());
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.3f",
                json["throughput_samples_per_second"].get<double>());
  CHECK(first[std::size_t(column - header.begin())] == expected);
  // Per-IPU columns for pandas, as sweep writes them: the fullest IPU is the maximum.
  REQUIRE(header.size() >= 4);
  CHECK(std::vector<std::string>(header.end() - 4, header.end()) ==
        std::vector<std::string>{"utilisation_ipu0", "utilisation_ipu1", "peak_memory_bytes_ipu0",
                                 "peak_memory_bytes_ipu1"});
  const auto cell = [&](const std::string& name) {
    return std::stoll(
        first[std::size_t(std::find(header.begin(), header.end(), name) - header.begin())]);
  };
  CHECK(cell("peak_memory_bytes_max") ==
        std::max(cell("peak_memory_bytes_ipu0"), cell("peak_memory_bytes_ipu1")));
  // The table's figure is the run's, to the sample per second; the config's own row is first.
  CHECK(lines(plan.out)[2].rfind("config  ", 0) == 0);
  const auto own = run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--no-numeric"});
  const auto own_line = lines(own.out)[5];
  CHECK_THAT(
      lines(plan.out)[2],
      Catch::Matchers::Contains(" " + own_line.substr(12, own_line.find(" samples/s") - 12) + " "));
  const auto table_row = lines(plan.out)[3];
  const auto throughput_line = lines(run.out)[5];
  const auto figure = throughput_line.substr(12, throughput_line.find(" samples/s") - 12);
  CHECK_THAT(table_row, Catch::Matchers::Contains(" " + figure + " "));
  CHECK_THAT(read_file(best),
             Catch::Matchers::Contains("\"description\": \"planned by ipusim plan"));
}

TEST_CASE("plan says why nothing fits and exits with the simulation outcome code") {
  const auto result = run_ipusim(
      {"plan", "configs/tf1_mnist_2ipu.json", "--set", "hardware.memory_per_ipu=\"4MB\""});
  CHECK(result.code == 3);
  CHECK(result.out.empty());
  const auto text = lines(result.err);
  REQUIRE(text.size() >= 3);
  CHECK(text[0] ==
        "no candidate fits in memory: 18 candidate(s) evaluated on the cost model (18 over "
        "capacity by the estimate, 0 refused by validation), 3 replayed");
  CHECK(text[1] ==
        "the smallest peak found: IPU0 needs 11.3 MB of its 4 MB with splits=[\"dense128\"] "
        "schedule=sequential gac=16 micro-batch=32 recomputation=none. Largest consumers there:");
  CHECK(text[2] == "  7 MB  control program");
  CHECK(text.back() ==
        "What would help: more IPUs per replica (--ipus-per-replica 4), recomputation "
        "(--recomputation auto), --set "
        "pipeline.offload_weight_update_variables=true, --set pipeline.offload_activations=true, "
        "a smaller micro-batch (--micro-batch 16)");
}

TEST_CASE("plan lists each setting it skipped with the error that rules it out") {
  const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "6"});
  CHECK(result.code == 0);
  const auto text = lines(result.out);
  // Then the grouped setting at the nearest GAC values it accepts: a title, a header, the
  // config's row and two rows.
  REQUIRE(text.size() >= 7);
  CHECK(text[text.size() - 7] ==
        "12 candidate(s) evaluated on the cost model (0 over capacity by the estimate, 0 refused "
        "by validation), 12 replayed");
  CHECK(text[text.size() - 6] ==
        "skipped: --schedules grouped --gac 6: --gac 6: at "
        "/pipeline/gradient_accumulation_count: The number of iterations of the pipeline must be "
        "a multiple of 4, but it is 6. This number is gradient_accumulation_count; the grouped "
        "schedule with 2 stages runs 4 micro-batches at once (set "
        "pipeline.relaxed_divisibility to explore it anyway)");
}

TEST_CASE("two plan shards merged give the unsharded plan's best and table") {
  const std::vector<std::string> search = {
      "plan", "configs/tf1_mnist_2ipu.json", "--gac", "8,16", "--jobs", "2", "--top", "3"};
  const auto whole_best = fresh_output("plan_test", "whole_best.json");
  auto args = search;
  args.insert(args.end(), {"-o", whole_best});
  const auto whole = run_ipusim(args);
  REQUIRE(whole.code == 0);
  std::vector<std::string> parts;
  for (const char* shard : {"1/2", "2/2"}) {
    parts.push_back(fresh_output("plan_test", std::string("shard") + shard[0] + ".csv"));
    args = search;
    args.insert(args.end(), {"--shard", shard, "--csv", parts.back()});
    const auto part = run_ipusim(args);
    REQUIRE(part.code == 0);
    CHECK_THAT(lines(part.out).back(),
               Catch::Matchers::StartsWith("shard " + std::string(shard) + " (3 setting(s)): "));
  }
  const auto merged_best = fresh_output("plan_test", "merged_best.json");
  const auto merged = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--merge",
                                  parts[0] + "," + parts[1], "--top", "3", "-o", merged_best});
  REQUIRE(merged.code == 0);
  const auto a = lines(whole.out);
  const auto b = lines(merged.out);
  REQUIRE(a.size() == b.size());
  // The table, why each lost and the best are the same; only the counts line differs.
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    CHECK(a[i] == b[i]);
  CHECK(b.back() ==
        "merged 2 shard file(s): 36 replayed candidate(s) ranked on their figures, 3 "
        "replayed again");
  CHECK(read_file(merged_best) == read_file(whole_best));
}

TEST_CASE("plan --merge refuses the search options, which only the shards use") {
  const auto result =
      run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--merge", "missing.csv", "--gac", "8"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --merge: --gac belongs to the shards' searches; --merge only ranks "
        "what their files hold: drop --gac\n");
}

TEST_CASE("plan --merge names a file that is not a plan CSV") {
  const auto bogus = fresh_output("plan_test", "bogus.csv");
  std::ofstream(bogus) << "run,x\n0,1\n";
  const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--merge", bogus});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + bogus +
                          ": expected the CSV of ipusim plan --csv, whose header starts "
                          "rank,splits,ipus_per_replica; this header is not plan's\n");
}

TEST_CASE("plan --html draws every replayed candidate against the capacity, the same bytes twice") {
  const auto first = fresh_output("plan_test", "plan1.html");
  const auto second = fresh_output("plan_test", "plan2.html");
  for (const auto& path : {first, second}) {
    const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "8,16",
                                    "--html", path, "--quiet", "--jobs", "2"});
    REQUIRE(result.code == 0);
    CHECK(result.out.empty());
  }
  const auto page = read_file(first);
  CHECK(page == read_file(second));
  CHECK_THAT(page, Catch::Matchers::Contains("over capacity (940.6 MB)"));
  // 36 replayed candidates, one circle each.
  std::size_t circles = 0;
  for (auto at = page.find("<circle"); at != std::string::npos; at = page.find("<circle", at + 1))
    ++circles;
  CHECK(circles == 36);
}

TEST_CASE("a plan shard where nothing fits still writes its CSV for the merge") {
  const auto csv = fresh_output("plan_test", "nothing.csv");
  const auto best = fresh_output("plan_test", "nothing_best.json");
  const auto result =
      run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--set", "hardware.memory_per_ipu=\"4MB\"",
                  "--shard", "1/2", "--csv", csv, "-o", best});
  CHECK(result.code == 3);
  // The header, then the least-memory split of each of the shard's settings: grouped and
  // sequential (settings 1 and 3 of 3).
  CHECK(lines(read_file(csv)).size() == 3);
  CHECK(!std::filesystem::exists(best));
}

TEST_CASE("plan refuses an empty value in a list as sweep does, and does not drop it") {
  const auto gac = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "8,,16"});
  CHECK(gac.code == 2);
  CHECK(gac.out.empty());
  CHECK(gac.err == "error: --gac 8,,16: a value is empty (two commas in a row, or none given)\n");
  const auto schedules =
      run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--schedules", "grouped,"});
  CHECK(schedules.code == 2);
  CHECK(schedules.err ==
        "error: --schedules grouped,: a value is empty (two commas in a row, or none given)\n");
}

TEST_CASE("plan refuses IPUs per replica past --ipus's bound before building a mapping") {
  const auto result =
      run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--ipus-per-replica", "1073741824"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --ipus-per-replica 1073741824: expected at most 1024 IPUs per replica, the most "
        "--ipus takes\n");
}

TEST_CASE("plan shows a schedule its GAC rules out at the nearest GAC values it accepts") {
  const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "6",
                                  "--schedules", "grouped,sequential", "--jobs", "2"});
  REQUIRE(result.code == 0);
  const auto out = lines(result.out);
  const auto header = std::find(out.begin(), out.end(),
                                "at the nearest GAC values their schedule accepts (the best split "
                                "of each, replayed; not ranked above, plan at one with --gac):");
  REQUIRE(header != out.end());
  REQUIRE(out.end() - header == 5);
  CHECK(header[1].rfind("Instead of  dense layers per IPU  Schedule  GAC  Micro-batch", 0) == 0);
  CHECK(header[2].rfind("config      3,2                   grouped    16           32  none", 0) ==
        0);
  CHECK(header[3].rfind("GAC 6       2,3                   grouped     4           32  none", 0) ==
        0);
  CHECK(header[4].rfind("GAC 6       2,3                   grouped     8           32  none", 0) ==
        0);
}

TEST_CASE("plan names the replay cap, not memory, when it refused every candidate") {
  const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "250000016"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: no candidate could be replayed: 18 candidate(s) evaluated on the cost model (0 "
        "over capacity by the estimate, 18 refused by validation), 0 replayed\n"
        "each of the 18 refused at its replay, the first so: --gac 250000016: at "
        "/pipeline/gradient_accumulation_count: the replay would run about 2e+09 tasks (8 a "
        "micro-batch x 250,000,016 micro-batches), more than the 2,000,000,000 ipusim replays "
        "in one run (a few minutes); lower gradient_accumulation_count\n");
}

TEST_CASE("plan's --gac acts on a fixed split whose config GAC its schedule refuses") {
  // Grouped with two stages needs a multiple of 4: the config's 6 is replaced by --gac 8.
  const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--set",
                                  "pipeline.gradient_accumulation_count=6", "--splits", "dense64",
                                  "--gac", "8", "--top", "1"});
  CHECK(result.code == 0);
  CHECK(result.out.find("best: splits=[\"dense64\"] schedule=grouped gac=8 ") != std::string::npos);
}

TEST_CASE("plan names the operation that bounds each stage of the best") {
  const auto best = fresh_output("plan_test", "bounds.json");
  const auto plan = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "16", "-o", best});
  REQUIRE(plan.code == 0);
  // The best config's own operations table: each stage's operations summed by name over its
  // layers (forward, backward and recomputation cycles), the largest and its share.
  const auto report = fresh_output("plan_test", "bounds_run.json");
  REQUIRE(run_ipusim({"run", best, "--no-numeric", "--ops", "--json", report}).code == 0);
  const auto ops = nlohmann::json::parse(read_file(report))["operations"];
  std::string expected =
      "what bounds each stage of the best (its heaviest operation, share of "
      "its operations' cycles per micro-batch):\n";
  for (int stage = 0; stage < 2; ++stage) {
    std::map<std::string, std::pair<std::int64_t, std::vector<std::string>>> by_name;
    std::int64_t total = 0;
    for (const auto& op : ops) {
      if (op["stage"] != stage)
        continue;
      const std::int64_t cycles = op["forward_cycles"].get<std::int64_t>() +
                                  op["backward_cycles"].get<std::int64_t>() +
                                  op["recompute_cycles"].get<std::int64_t>();
      auto& entry = by_name[op["operation"].get<std::string>()];
      entry.first += cycles;
      entry.second.push_back(op["layer"].get<std::string>());
      total += cycles;
    }
    const auto heaviest = std::max_element(
        by_name.begin(), by_name.end(),
        [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    const auto& layers = heaviest->second.second;
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%",
                  100.0 * double(heaviest->second.first) / double(total));
    const std::string what = layers.size() == 1
                                 ? layers[0] + " " + heaviest->first
                                 : heaviest->first + " of " + std::to_string(layers.size()) +
                                       " layers (" + layers[0] + ", ...)";
    expected += "  stage " + std::to_string(stage) + " on IPU" + std::to_string(stage) + ": " +
                what + " (matmul, compute/compute bound), " + share + "\n";
  }
  CHECK_THAT(plan.out, Catch::Contains(expected));
}

TEST_CASE("plan --relayout searches 1f1b on one stage per IPU and its -o config runs it") {
  const auto best = fresh_output("plan_test", "relaid.json");
  const auto plan = run_ipusim(
      {"plan", "configs/gpt_tiny_2ipu.json", "--schedules", "1f1b", "--relayout", "-o", best});
  REQUIRE(plan.code == 0);
  // Without --relayout the config's head back on IPU0 rules 1f1b out.
  CHECK(run_ipusim({"plan", "configs/gpt_tiny_2ipu.json", "--schedules", "1f1b"}).code == 2);
  const auto best_line = lines(plan.out);
  const auto line = std::find_if(best_line.begin(), best_line.end(),
                                 [](const auto& l) { return l.rfind("best: ", 0) == 0; });
  REQUIRE(line != best_line.end());
  CHECK_THAT(*line, Catch::Matchers::EndsWith(" device_mapping=[0,1]"));
  const auto written = nlohmann::json::parse(read_file(best));
  CHECK(written.at("pipeline").at("device_mapping") == nlohmann::json::array({0, 1}));
  CHECK(written.at("pipeline").at("splits").size() == 1);
  CHECK(run_ipusim({"run", best, "--no-numeric", "--quiet"}).code == 0);
}

TEST_CASE("plan --relayout with a fixed split says the two cannot go together") {
  const auto plan = run_ipusim({"plan", "configs/gpt_tiny_2ipu.json", "--schedules", "1f1b",
                                "--relayout", "--splits", "block2.ln1,ln_f"});
  CHECK(plan.code == 2);
  CHECK(plan.err ==
        "error: --relayout: re-splits the model into the stages a schedule needs, but the split "
        "is fixed (--splits or --set pipeline.splits): drop one of them\n");
}

TEST_CASE("what would help suggests nothing plan searched, nor a --set its lists override") {
  const std::vector<std::string> tight = {"plan",
                                          "configs/tf1_mnist_2ipu.json",
                                          "--set",
                                          "hardware.memory_per_ipu=\"4MB\"",
                                          "--ipus-per-replica",
                                          "2,4",
                                          "--recomputation",
                                          "none,auto"};
  auto args = tight;
  args.insert(args.end(), {"--offload", "none,weight_update_variables", "--micro-batch", "32,16"});
  auto result = run_ipusim(args);
  CHECK(result.code == 3);
  CHECK(lines(result.err).back() ==
        "What would help: more IPUs per replica (--ipus-per-replica 8), offloading both "
        "(--offload both), a smaller micro-batch (--micro-batch 8)");
  args = tight;
  args.insert(args.end(), {"--offload", "none,both", "--micro-batch", "32,8"});
  result = run_ipusim(args);
  CHECK(result.code == 3);
  CHECK(lines(result.err).back() ==
        "What would help: more IPUs per replica (--ipus-per-replica 8), a smaller micro-batch "
        "(--micro-batch 4)");
}

TEST_CASE("plan shows candidates of the same row once, with each one's split") {
  const auto plan = run_ipusim({"plan", "configs/bert_large_4ipu.json", "--top", "5"});
  REQUIRE(plan.code == 0);
  const auto text = lines(plan.out);
  const auto row = std::find_if(text.begin(), text.end(),
                                [](const auto& l) { return l.rfind("#4-#5 ", 0) == 0; });
  REQUIRE(row != text.end());
  CHECK(row->rfind("#4-#5   6+head,6,6,6 (2 splits) ", 0) == 0);
  CHECK(
      std::none_of(text.begin(), text.end(), [](const auto& l) { return l.rfind("#5 ", 0) == 0; }));
  const std::string prefix = "#4-#5: 2 splits of the same row, the first's memory shown: ";
  const auto listed = std::find_if(text.begin(), text.end(),
                                   [&](const auto& l) { return l.rfind(prefix, 0) == 0; });
  REQUIRE(listed != text.end());
  // Each split listed, run on its own: the same samples/s, as the one row says.
  std::vector<std::string> throughputs;
  for (std::size_t at = listed->find('['); at != std::string::npos;
       at = listed->find('[', at + 1)) {
    const auto splits = nlohmann::json::parse(listed->substr(at, listed->find(']', at) - at + 1));
    std::string flag;
    for (const auto& id : splits)
      flag += (flag.empty() ? "" : ",") + id.get<std::string>();
    const auto run =
        run_ipusim({"run", "configs/bert_large_4ipu.json", "--no-numeric", "--splits", flag});
    REQUIRE(run.code == 0);
    throughputs.push_back(lines(run.out)[5]);
  }
  REQUIRE(throughputs.size() == 2);
  CHECK(throughputs[0] == throughputs[1]);
}

TEST_CASE("a micro-batch list keeps the config's global batch and the table shows it") {
  // tf1: micro-batch 32 x GAC 16 x 1 replica = 512 samples a weight update.
  const auto plan = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--micro-batch",
                                "16,32,64,48", "--schedules", "grouped", "--top", "18"});
  REQUIRE(plan.code == 0);
  const auto text = lines(plan.out);
  CHECK(text[1].find("  Micro-batch  Recomputation  Global batch  ") != std::string::npos);
  std::map<std::string, std::set<std::string>> gacs;  // micro-batch -> GAC
  for (std::size_t i = 2; i < text.size() && text[i].rfind("config:", 0) != 0; ++i) {
    std::istringstream row(text[i]);
    std::string rank, layers, schedule, gac, micro_batch, recomputation, global;
    row >> rank >> layers >> schedule >> gac >> micro_batch >> recomputation >> global;
    CHECK(global == "512");
    gacs[micro_batch].insert(gac);
  }
  CHECK(gacs == std::map<std::string, std::set<std::string>>{
                    {"16", {"32"}}, {"32", {"16"}}, {"64", {"8"}}});
  CHECK(text.back() ==
        "skipped: --schedules grouped --micro-batch 48: the config's global batch 512 (kept as "
        "--micro-batch varies; --gac sets the GAC instead) is not a multiple of micro-batch 48 x 1 "
        "replica(s)");
}

TEST_CASE("plan's best is at the nearest legal GAC when that runs faster than every ranked one") {
  // BERT-Large's global batch 65,600 at micro-batch 16 is GAC 1,025, which grouped with 5
  // stages rules out (a multiple of 10); 1,020 and 1,030 are replayed beside the table.
  const auto best = fresh_output("plan_test", "nearest_best.json");
  const auto plan = run_ipusim(
      {"plan", "configs/bert_large_4ipu.json", "--micro-batch", "8,16", "--top", "2", "-o", best});
  REQUIRE(plan.code == 0);
  const auto text = lines(plan.out);
  const auto line = std::find_if(text.begin(), text.end(),
                                 [](const auto& l) { return l.rfind("best: ", 0) == 0; });
  REQUIRE(line != text.end());
  CHECK_THAT(*line, Catch::Matchers::EndsWith(
                        " micro-batch=16 recomputation=recompute_and_backpropagate_interleaved "
                        "(at the nearest GAC its schedule accepts instead of 1025, which it rules "
                        "out; faster than #1)"));
  const auto written = nlohmann::json::parse(read_file(best));
  const auto gac = written.at("pipeline").at("gradient_accumulation_count").get<int>();
  CHECK((gac == 1020 || gac == 1030));
  // It runs, and faster than #1 of the table.
  const auto run = run_ipusim({"run", best, "--no-numeric"});
  REQUIRE(run.code == 0);
  const auto samples = [](const std::string& s) {
    std::string digits;
    for (char c : s)
      if (std::isdigit(static_cast<unsigned char>(c)))
        digits += c;
    return std::stoll(digits);
  };
  const auto run_lines = lines(run.out);
  const auto throughput = *std::find_if(run_lines.begin(), run_lines.end(), [](const auto& l) {
    return l.rfind("Throughput: ", 0) == 0;
  });
  std::istringstream first(text[3]);
  std::vector<std::string> cells{std::istream_iterator<std::string>(first), {}};
  CHECK(samples(throughput.substr(12, throughput.find(" samples/s") - 12)) > samples(cells.at(7)));
}

TEST_CASE("plan searches ResNet-50 on 8 IPUs coarsely instead of skipping it, and says how") {
  const auto result =
      run_ipusim({"plan", "configs/resnet50_1ipu.json", "--ipus-per-replica", "8", "--schedules",
                  "sequential", "--recomputation", "auto", "--top", "2"});
  REQUIRE(result.code == 0);
  CHECK(result.out.find("\n1 setting(s) had more than 5,000,000 splits: searched with cuts on "
                        "every 6th layer boundary (or nearer), then their best 4 splits improved "
                        "one cut at a time\n") != std::string::npos);
  CHECK(result.out.find("skipped:") == std::string::npos);
}

TEST_CASE("plan --relayout names an unknown schedule with the nearest, as plan without it does") {
  const auto plan =
      run_ipusim({"plan", "configs/gpt_tiny_2ipu.json", "--schedules", "1fb1", "--relayout"});
  CHECK(plan.code == 2);
  CHECK(plan.err ==
        "error: configs/gpt_tiny_2ipu.json: no combination of the values asked for is a valid "
        "config; the first: --schedules 1fb1: --schedules 1fb1: at "
        "/pipeline/pipeline_schedule: unknown value '1fb1'; did you mean '1f1b'?\n");
}
