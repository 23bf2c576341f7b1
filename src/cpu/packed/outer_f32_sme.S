// The SME core of the sme-tier kernels (packed_sme.cpp): `steps` products of a tile of L
// activation rows times 16 weight rows, each the sum of k rank-1 updates (FMOPA) in the ZA array,
// L = the streaming vector length in 32-bit lanes (SVL / 32; 8 at QEMU's default 256 bits).
//
//   void tsl_sme_f32_steps(const float* xt, const float* wt, int64_t k, int64_t steps, float* out);
//     xt   [steps][k][L] floats: xt[(s * k + e) * L + i] = activation row i, element e of step s
//     wt   [steps][k][16] floats: weight row j, element e of step s at [(s * k + e) * 16 + j]
//     out  [steps][L][16] floats: out[(s * L + i) * 16 + j] = sum_e xt[s][e][i] * wt[s][e][j],
//          summed in e order with one rounding per FMOPA (a fused multiply-add per element)
//
// The 16 weight columns span ceil(16 / L) ZA tiles: four (za0..za3) at L = 4, two at L = 8, one
// (predicated to 16 lanes) from L = 16 up. The function enters streaming mode with ZA on and leaves
// both before it returns; SMSTART/SMSTOP zero the vector registers, so it saves d8-d15, which the
// procedure call standard makes callee-saved. It is a private-ZA function of a process that keeps
// no ZA state anywhere else (no lazy save can be pending).
    .arch armv9-a+sme
    .text
    .p2align 4
    .global tsl_sme_f32_steps
    .hidden tsl_sme_f32_steps
    .type tsl_sme_f32_steps, %function
tsl_sme_f32_steps:                  // x0 xt, x1 wt, x2 k, x3 steps, x4 out
    stp     d8, d9, [sp, #-64]!
    stp     d10, d11, [sp, #16]
    stp     d12, d13, [sp, #32]
    stp     d14, d15, [sp, #48]
    smstart
    cntw    x5                      // L
    ptrue   p0.s
    mov     x6, #16
    whilelt p1.s, xzr, x6           // the 16 weight lanes of a single tile (all lanes below L = 16)
    lsl     x8, x5, #1              // 2 L: the third tile's column offset in floats
    add     x9, x8, x5              // 3 L
    cbz     x3, .Ldone
.Lstep:
    zero    {za}
    mov     x7, x2
    cbz     x7, .Lstore
    cmp     x5, #8
    b.lt    .Lk4
    b.eq    .Lk2
.Lk1:                               // L >= 16: one tile
    ld1w    {z0.s}, p0/z, [x0]
    ld1w    {z1.s}, p1/z, [x1]
    fmopa   za0.s, p0/m, p1/m, z0.s, z1.s
    add     x0, x0, x5, lsl #2
    add     x1, x1, #64
    subs    x7, x7, #1
    b.ne    .Lk1
    b       .Lstore
.Lk2:                               // L == 8: columns 0-7 in za0, 8-15 in za1
    ld1w    {z0.s}, p0/z, [x0]
    ld1w    {z1.s}, p0/z, [x1]
    ld1w    {z2.s}, p0/z, [x1, #1, mul vl]
    fmopa   za0.s, p0/m, p0/m, z0.s, z1.s
    fmopa   za1.s, p0/m, p0/m, z0.s, z2.s
    add     x0, x0, x5, lsl #2
    add     x1, x1, #64
    subs    x7, x7, #1
    b.ne    .Lk2
    b       .Lstore
.Lk4:                               // L == 4: columns 4t..4t+3 in za<t>
    ld1w    {z0.s}, p0/z, [x0]
    ld1w    {z1.s}, p0/z, [x1]
    ld1w    {z2.s}, p0/z, [x1, #1, mul vl]
    ld1w    {z3.s}, p0/z, [x1, #2, mul vl]
    ld1w    {z4.s}, p0/z, [x1, #3, mul vl]
    fmopa   za0.s, p0/m, p0/m, z0.s, z1.s
    fmopa   za1.s, p0/m, p0/m, z0.s, z2.s
    fmopa   za2.s, p0/m, p0/m, z0.s, z3.s
    fmopa   za3.s, p0/m, p0/m, z0.s, z4.s
    add     x0, x0, x5, lsl #2
    add     x1, x1, #64
    subs    x7, x7, #1
    b.ne    .Lk4
.Lstore:                            // row i of every tile -> out + 64 i (+ 4 L bytes per tile)
    mov     w12, #0
    cmp     x5, #8
    b.lt    .Ls4
    b.eq    .Ls2
.Ls1:
    st1w    {za0h.s[w12, 0]}, p1, [x4]
    add     x4, x4, #64
    add     w12, w12, #1
    cmp     x12, x5
    b.lt    .Ls1
    b       .Lnext
.Ls2:
    st1w    {za0h.s[w12, 0]}, p0, [x4]
    st1w    {za1h.s[w12, 0]}, p0, [x4, x5, lsl #2]
    add     x4, x4, #64
    add     w12, w12, #1
    cmp     x12, x5
    b.lt    .Ls2
    b       .Lnext
.Ls4:
    st1w    {za0h.s[w12, 0]}, p0, [x4]
    st1w    {za1h.s[w12, 0]}, p0, [x4, x5, lsl #2]
    st1w    {za2h.s[w12, 0]}, p0, [x4, x8, lsl #2]
    st1w    {za3h.s[w12, 0]}, p0, [x4, x9, lsl #2]
    add     x4, x4, #64
    add     w12, w12, #1
    cmp     x12, x5
    b.lt    .Ls4
.Lnext:
    subs    x3, x3, #1
    b.ne    .Lstep
.Ldone:
    smstop
    ldp     d10, d11, [sp, #16]
    ldp     d12, d13, [sp, #32]
    ldp     d14, d15, [sp, #48]
    ldp     d8, d9, [sp], #64
    ret
    .size tsl_sme_f32_steps, .-tsl_sme_f32_steps

// int64_t tsl_sme_lanes(void): L, the streaming vector length in 32-bit lanes (RDSVL runs outside
// streaming mode too).
    .p2align 4
    .global tsl_sme_lanes
    .hidden tsl_sme_lanes
    .type tsl_sme_lanes, %function
tsl_sme_lanes:
    rdsvl   x0, #1
    lsr     x0, x0, #2
    ret
    .size tsl_sme_lanes, .-tsl_sme_lanes

    .section .note.GNU-stack, "", %progbits
