// The HVX integer code of the NPU device runtime against its plain C build, run under qemu-hexagon
// (kernels_check.c): vec_i8.h's vrmpy dot products and scaled accumulation lane by lane, and the
// tiled matmul kernel (tsl_npu_mm_tile_cols_hvx) bit for bit with tsl_npu_mm_tile_cols_c for every
// tile type.
#include <string>

#include "hexagon/hexagon_programs.hpp"

namespace tessel::test {
namespace {

TEST(HexagonKernels, HvxMatchesPlainCLaneByLaneAndTileByTile) {
    const std::string program = hexagon_program("tessel-hexagon-kernels-check");
    ASSERT_FALSE(program.empty());
    int status = 0;
    const std::string out = run_hexagon(program, "", &status);
    EXPECT_EQ(status, 0) << out;
    EXPECT_EQ(out.find("MISMATCH"), std::string::npos) << out;
    EXPECT_NE(out.find("lanes dot4 dot4_bcast scale_acc 2000 ok\n"), std::string::npos) << out;
    for (const char* type : {"Q4_0", "Q4_1", "Q8_0", "IQ4_NL", "MXFP4"})
        EXPECT_NE(out.find(std::string("tile ") + type + " 12 shapes ok\n"), std::string::npos) << type << "\n" << out;
    EXPECT_NE(out.find("\nend\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace tessel::test
