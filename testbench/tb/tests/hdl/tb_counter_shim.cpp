// Hand-written nicgen shim (ABI 1) for the `tb_counter` test design.
#include <cstdint>
#include <memory>

#include "verilated.h"
#include "Vtb_counter.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#endif

namespace {

const char kLayout[] =
    "{\"top\":\"tb_counter\",\"in_words\":3,\"out_words\":1,"
    "\"inputs\":[{\"name\":\"rst\",\"width\":1,\"offset\":0,\"words\":1},"
    "{\"name\":\"en\",\"width\":1,\"offset\":1,\"words\":1},"
    "{\"name\":\"step\",\"width\":16,\"offset\":2,\"words\":1}],"
    "\"outputs\":[{\"name\":\"value\",\"width\":16,\"offset\":0,\"words\":1}]}";

struct Instance {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vtb_counter> top;
#if VM_TRACE_FST
    std::unique_ptr<VerilatedFstC> fst;
#endif
    uint64_t cycles = 0;
};

void apply(Vtb_counter& t, const uint64_t* in) {
    t.rst = in[0] & 1;
    t.en = in[1] & 1;
    t.step = in[2] & 0xffff;
}

void sample(const Vtb_counter& t, uint64_t* out) { out[0] = t.value; }

void dump(Instance* inst) {
#if VM_TRACE_FST
    if (inst->fst) inst->fst->dump(inst->ctx->time());
#else
    (void)inst;
#endif
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
    inst->top.reset(new Vtb_counter(inst->ctx.get(), "tb_counter"));
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
    delete inst;
}

void nicgen_cycle(void* h, const uint64_t* in, uint64_t* out) {
    Instance* inst = static_cast<Instance*>(h);
    Vtb_counter& t = *inst->top;
    apply(t, in);
    t.eval();
    sample(t, out);
    dump(inst);
    inst->ctx->timeInc(5);
    t.clk = 1;
    t.eval();
    dump(inst);
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
