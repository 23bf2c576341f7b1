// The device's kernel table (src/npu/device/kernels.h): chosen once from the platform's isa bits,
// each op's best kernel among the extensions present, plain C for none; tsl_npu_device_use_isa
// switches a device's table.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "npu/device/device.h"
#include "npu/posix/platform_posix.h"

namespace {

TEST(NpuDeviceKernels, NoIsaBitsMeansPlainC) {
    tsl_npu_kernels k;
    tsl_npu_kernels_select(0, &k);
    EXPECT_EQ(std::string(k.vector), "c");
    EXPECT_EQ(std::string(k.matrix), "");
    EXPECT_EQ(k.mm_tile_cols, &tsl_npu_mm_tile_cols_c);
    EXPECT_EQ(k.mm_quantize, &tsl_npu_mm_quantize_c);
    EXPECT_EQ(k.mm_dot, &tsl_npu_mm_dot_c);
    EXPECT_EQ(k.matrix_tile_cols, nullptr);
    EXPECT_EQ(k.matrix_begin, nullptr);
    // a bit this build has no kernels for changes nothing (HVX on a host, AVX2 on a DSP)
    tsl_npu_kernels other;
#if defined(__x86_64__)
    tsl_npu_kernels_select(TSL_NPU_ISA_HVX, &other);
#else
    tsl_npu_kernels_select(TSL_NPU_ISA_AVX2 | TSL_NPU_ISA_AMX_INT8, &other);
#endif
    EXPECT_EQ(std::string(other.vector), "c");
    EXPECT_EQ(other.mm_tile_cols, k.mm_tile_cols);
    EXPECT_EQ(other.glu_row, k.glu_row);
    EXPECT_EQ(other.fa_rows, k.fa_rows);
    EXPECT_EQ(other.matrix_tile_cols, nullptr);
}

#if defined(__x86_64__)
TEST(NpuDeviceKernels, EachOpTakesTheBestKernelOfTheBitsPresent) {
    tsl_npu_kernels k;
    tsl_npu_kernels_select(TSL_NPU_ISA_AVX2, &k);
    EXPECT_EQ(std::string(k.vector), "avx2");
    EXPECT_EQ(k.mm_tile_cols, &tsl_npu_mm_tile_cols_avx2);
    EXPECT_EQ(k.mm_quantize, &tsl_npu_mm_quantize_avx2);
    // AVX-512 F without VNNI: the float kernels move up, the integer matmul stays on AVX2
    tsl_npu_kernels f;
    tsl_npu_kernels_select(TSL_NPU_ISA_AVX2 | TSL_NPU_ISA_AVX512, &f);
    EXPECT_EQ(f.mm_tile_cols, &tsl_npu_mm_tile_cols_avx2);
    EXPECT_NE(f.glu_row, k.glu_row);
    EXPECT_NE(f.fa_rows, k.fa_rows);
    // VBMI keeps VNNI's quantizer
    tsl_npu_kernels v;
    tsl_npu_kernels_select(TSL_NPU_ISA_AVX2 | TSL_NPU_ISA_AVX512 | TSL_NPU_ISA_AVX512VNNI | TSL_NPU_ISA_AVX512VBMI, &v);
    EXPECT_EQ(std::string(v.vector), "avx512vbmi");
    EXPECT_EQ(v.mm_tile_cols, &tsl_npu_mm_tile_cols_avx512vbmi);
    EXPECT_EQ(v.mm_quantize, &tsl_npu_mm_quantize_avx512vnni);
    EXPECT_EQ(v.matrix_tile_cols, nullptr);
    tsl_npu_kernels a;
    tsl_npu_kernels_select(TSL_NPU_ISA_AVX512VNNI | TSL_NPU_ISA_AMX_INT8, &a);
    EXPECT_EQ(std::string(a.matrix), "amx");
    EXPECT_EQ(a.matrix_tile_cols, &tsl_npu_mm_tile_cols_amx);
    EXPECT_EQ(a.matrix_reshape, &tsl_npu_mm_amx_reshape);
}
#endif

TEST(NpuDeviceKernels, TheDeviceTakesItsPlatformsIsaAtInitAndUseIsaSwitches) {
    tsl_npu_platform platform{};
    ASSERT_EQ(tsl_npu_posix_platform_create(1, 0, &platform), TSL_NPU_OK);
    auto device = std::make_unique<tsl_npu_device>();
    ASSERT_EQ(tsl_npu_device_init(device.get(), &platform), TSL_NPU_OK);
    tsl_npu_kernels expected;
    tsl_npu_kernels_select(platform.isa, &expected);
    EXPECT_EQ(std::string(device->kernels.vector), expected.vector);
    EXPECT_EQ(device->kernels.mm_tile_cols, expected.mm_tile_cols);
    tsl_npu_hwinfo hw;
    tsl_npu_device_hwinfo(device.get(), &hw);
    EXPECT_EQ(hw.matrix_unit, expected.matrix_tile_cols ? 1u : 0u);
    tsl_npu_device_use_isa(device.get(), 0);
    EXPECT_EQ(device->platform.isa, 0u);
    EXPECT_EQ(std::string(device->kernels.vector), "c");
    EXPECT_EQ(device->kernels.mm_tile_cols, &tsl_npu_mm_tile_cols_c);
    tsl_npu_device_release(device.get());
    tsl_npu_posix_platform_destroy(&platform);
}

}  // namespace
