// The names numeric mode gives the parameter files of the layers PyTorch models bring: a
// position_table's table and a class_token's token, as an importer writes them.

#include <catch2/catch.hpp>

#include "sim/numeric/training.hpp"
#include "tests/models/model_test_support.hpp"

using namespace ipusim;

TEST_CASE("a position table and a class token are saved as <id>.table and <id>.token") {
  const models::Model model =
      models::testing::model_from(models::testing::with_layers("[4, 8]", R"([
      {"id": "cls", "type": "class_token"},
      {"id": "pos", "type": "position_table"},
      {"id": "image", "type": "reshape", "shape": [5, 8, 1]},
      {"id": "pool", "type": "avgpool2d"},
      {"id": "head", "type": "token_select"}])"));
  CHECK(sim::parameter_names(model, model.index_of("cls")) ==
        std::vector<std::string>{"cls.token"});
  CHECK(sim::parameter_names(model, model.index_of("pos")) ==
        std::vector<std::string>{"pos.table"});
  CHECK(sim::parameter_names(model, model.index_of("pool")).empty());
}
