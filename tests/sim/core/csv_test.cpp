#include "sim/core/csv.hpp"

#include <catch2/catch.hpp>

using namespace ipusim::core;

TEST_CASE("a cell a spreadsheet would run as a formula gets a leading quote") {
  CHECK(csv_cell("=1+2") == "'=1+2");
  CHECK(csv_cell("+cmd") == "'+cmd");
  CHECK(csv_cell("-x") == "'-x");
  CHECK(csv_cell("@SUM(A1)") == "'@SUM(A1)");
  CHECK(csv_cell("\tx") == "'\tx");
  CHECK(csv_cell("\rx") == "\"'\rx\"");
  CHECK(csv_cell("--vary a=b") == "'--vary a=b");
  CHECK(csv_cell("=a,b") == "\"'=a,b\"");
  CHECK(csv_cell("'=x") == "''=x");
}

TEST_CASE("numbers, plain text and a quote before plain text are written as they are") {
  CHECK(csv_cell("-1.5") == "-1.5");
  CHECK(csv_cell("+3") == "+3");
  CHECK(csv_cell("-2e-05") == "-2e-05");
  CHECK(csv_cell("-7") == "-7");
  CHECK(csv_cell("grouped") == "grouped");
  CHECK(csv_cell("'quoted") == "'quoted");
  CHECK(csv_cell("") == "");
  CHECK(csv_cell("a \"b\"") == "\"a \"\"b\"\"\"");
}

TEST_CASE("every cell reads back as it was given") {
  const std::vector<std::string> cells = {"=1+2", "+cmd",  "-x",    "@SUM(A1)", "\tx",  "-1.5",
                                          "+3",   "'=x",   "''@y",  "'quoted",  "=a,b", "",
                                          "-",    "-1.5e", "'-1.5", "a \"b\"",  "'"};
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i)
    line += (i ? "," : "") + csv_cell(cells[i]);
  CHECK(split_csv_line(line, "f.csv", 1) == cells);
}
