// Hand-written nicgen shim (ABI 1) for the `tb_pipe` test design. It follows
// the contract that the eDSL's shim emitter implements; see the module docs
// of `nicgen_tb::verilator`.
#include <cstdint>
#include <cstring>
#include <memory>

#include "verilated.h"
#include "Vtb_pipe.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#endif

namespace {

const char kLayout[] =
    "{\"top\":\"tb_pipe\",\"in_words\":10,\"out_words\":10,"
    "\"inputs\":["
    "{\"name\":\"rst\",\"width\":1,\"offset\":0,\"words\":1},"
    "{\"name\":\"d\",\"width\":100,\"offset\":1,\"words\":2},"
    "{\"name\":\"a\",\"width\":8,\"offset\":3,\"words\":1},"
    "{\"name\":\"s_axis_tdata\",\"width\":32,\"offset\":4,\"words\":1},"
    "{\"name\":\"s_axis_tkeep\",\"width\":4,\"offset\":5,\"words\":1},"
    "{\"name\":\"s_axis_tvalid\",\"width\":1,\"offset\":6,\"words\":1},"
    "{\"name\":\"s_axis_tlast\",\"width\":1,\"offset\":7,\"words\":1},"
    "{\"name\":\"s_axis_tuser\",\"width\":3,\"offset\":8,\"words\":1},"
    "{\"name\":\"m_axis_tready\",\"width\":1,\"offset\":9,\"words\":1}],"
    "\"outputs\":["
    "{\"name\":\"q\",\"width\":100,\"offset\":0,\"words\":2},"
    "{\"name\":\"a_inc\",\"width\":8,\"offset\":2,\"words\":1},"
    "{\"name\":\"count\",\"width\":32,\"offset\":3,\"words\":1},"
    "{\"name\":\"s_axis_tready\",\"width\":1,\"offset\":4,\"words\":1},"
    "{\"name\":\"m_axis_tdata\",\"width\":32,\"offset\":5,\"words\":1},"
    "{\"name\":\"m_axis_tkeep\",\"width\":4,\"offset\":6,\"words\":1},"
    "{\"name\":\"m_axis_tvalid\",\"width\":1,\"offset\":7,\"words\":1},"
    "{\"name\":\"m_axis_tlast\",\"width\":1,\"offset\":8,\"words\":1},"
    "{\"name\":\"m_axis_tuser\",\"width\":3,\"offset\":9,\"words\":1}]}";

struct Instance {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vtb_pipe> top;
#if VM_TRACE_FST
    std::unique_ptr<VerilatedFstC> fst;
#endif
    uint64_t cycles = 0;
};

inline uint64_t mask(unsigned width) { return width >= 64 ? ~0ull : (1ull << width) - 1; }

// Copy `width` bits from uint64_t words into a Verilator wide signal (32-bit words).
void to_wide(uint32_t* dst, const uint64_t* src, unsigned width) {
    const unsigned n32 = (width + 31) / 32;
    for (unsigned k = 0; k < n32; ++k) dst[k] = static_cast<uint32_t>(src[k / 2] >> (32 * (k % 2)));
    if (width % 32) dst[n32 - 1] &= (1u << (width % 32)) - 1;
}

void from_wide(uint64_t* dst, const uint32_t* src, unsigned width) {
    const unsigned n32 = (width + 31) / 32;
    for (unsigned k = 0; k < (width + 63) / 64; ++k) dst[k] = 0;
    for (unsigned k = 0; k < n32; ++k) dst[k / 2] |= static_cast<uint64_t>(src[k]) << (32 * (k % 2));
}

void apply(Vtb_pipe& t, const uint64_t* in) {
    t.rst = in[0] & mask(1);
    to_wide(t.d.data(), in + 1, 100);
    t.a = in[3] & mask(8);
    t.s_axis_tdata = in[4] & mask(32);
    t.s_axis_tkeep = in[5] & mask(4);
    t.s_axis_tvalid = in[6] & mask(1);
    t.s_axis_tlast = in[7] & mask(1);
    t.s_axis_tuser = in[8] & mask(3);
    t.m_axis_tready = in[9] & mask(1);
}

void sample(const Vtb_pipe& t, uint64_t* out) {
    from_wide(out + 0, t.q.data(), 100);
    out[2] = t.a_inc;
    out[3] = t.count;
    out[4] = t.s_axis_tready;
    out[5] = t.m_axis_tdata;
    out[6] = t.m_axis_tkeep;
    out[7] = t.m_axis_tvalid;
    out[8] = t.m_axis_tlast;
    out[9] = t.m_axis_tuser;
}

}  // namespace

extern "C" {

uint32_t nicgen_abi_version(void) { return 1; }

const char* nicgen_layout(void) { return kLayout; }

void* nicgen_new(void) {
    Instance* inst = new Instance;
    inst->ctx.reset(new VerilatedContext);
#if VM_TRACE
    inst->ctx->traceEverOn(true);
#endif
    inst->top.reset(new Vtb_pipe(inst->ctx.get(), "tb_pipe"));
    inst->top->clk = 0;
    return inst;
}

void nicgen_free(void* h) {
    Instance* inst = static_cast<Instance*>(h);
#if VM_TRACE_FST
    if (inst->fst) inst->fst->close();
    inst->fst.reset();
#endif
    inst->top->final();
    inst->top.reset();
    inst->ctx.reset();
    delete inst;
}

void nicgen_cycle(void* h, const uint64_t* in, uint64_t* out) {
    Instance* inst = static_cast<Instance*>(h);
    Vtb_pipe& t = *inst->top;
    apply(t, in);
    t.eval();
    sample(t, out);
#if VM_TRACE_FST
    if (inst->fst) inst->fst->dump(inst->ctx->time());
#endif
    inst->ctx->timeInc(5);
    t.clk = 1;
    t.eval();
#if VM_TRACE_FST
    if (inst->fst) inst->fst->dump(inst->ctx->time());
#endif
    inst->ctx->timeInc(5);
    t.clk = 0;
    t.eval();
    inst->cycles += 1;
}

void nicgen_eval(void* h, const uint64_t* in, uint64_t* out) {
    Instance* inst = static_cast<Instance*>(h);
    apply(*inst->top, in);
    inst->top->eval();
    sample(*inst->top, out);
}

int nicgen_trace_open(void* h, const char* path) {
#if VM_TRACE_FST
    Instance* inst = static_cast<Instance*>(h);
    if (inst->fst) inst->fst->close();
    inst->fst.reset(new VerilatedFstC);
    inst->top->trace(inst->fst.get(), 99);
    inst->fst->open(path);
    return inst->fst->isOpen() ? 0 : -2;
#else
    (void)h;
    (void)path;
    return -1;
#endif
}

void nicgen_trace_close(void* h) {
#if VM_TRACE_FST
    Instance* inst = static_cast<Instance*>(h);
    if (inst->fst) inst->fst->close();
    inst->fst.reset();
#else
    (void)h;
#endif
}

uint64_t nicgen_cycles(void* h) { return static_cast<Instance*>(h)->cycles; }

}  // extern "C"
