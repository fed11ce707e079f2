#include "inductor/cpu/jit.h"

#include "inductor/cpu/vector_math.h"

#include <jitc/errors.h>

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <dlfcn.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <string_view>

namespace jitc::inductor::cpu {

namespace {

std::string to_string(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << error;
  return os.str();
}

// The libmvec variants kernels call (x86 vector function ABI: b = SSE4, d = AVX2, e = AVX-512): one ISA
// only, since the variants of different widths round differently and every element of a value must get
// the same bits (vector_math.h). AVX2's 256 bits are the width LLVM prefers on most x86 targets, AVX-512
// ones included. isa 0: no libmvec (glibc before 2.35, or not x86).
struct VectorMath {
  char isa = 0;
  int float_lanes = 0;

  int lanes(const llvm::Type* t) const { return t->isFloatTy() ? float_lanes : float_lanes / 2; }
  // `_ZGVdN8v_expf` for `expf`.
  std::string variant(const std::string& libm_name, int lanes, bool binary) const {
    return fmt::format("_ZGV{}N{}{}_{}", isa, lanes, binary ? "vv" : "v", libm_name);
  }
  // Whether this glibc has that variant (glibc 2.35 added most of them: an older one has exp, log, sin,
  // cos and pow only).
  static bool present(const std::string& variant) { return dlsym(RTLD_DEFAULT, variant.c_str()) != nullptr; }
};

VectorMath host_vector_math(const std::string& features) {
  if (!dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL)) return {};  // kernels resolve symbols in the process
  auto has = [&](const char* f) { return features.find(std::string("+") + f) != std::string::npos; };
  if (has("avx2") && has("fma")) return {'d', 8};
  if (has("sse4.1")) return {'b', 4};
  return {};
}

// The wrappers kernels call (`jitc.vm.expf`) map to their one vector variant, so that loops calling them
// vectorize; everything else about libm is LLVM's default.
std::unique_ptr<llvm::TargetLibraryInfoImpl> vector_library(const llvm::Triple& triple, const VectorMath& vm) {
  auto tlii = std::make_unique<llvm::TargetLibraryInfoImpl>(triple);
  if (vm.isa == 0) return tlii;
  static auto& names = *new std::deque<std::string>;  // VecDesc holds StringRefs
  std::vector<llvm::VecDesc> descs;
  for (const VectorMathFunction& f : vector_math_functions()) {
    const int lanes = f.is_float ? vm.float_lanes : vm.float_lanes / 2;
    const std::string variant = vm.variant(f.name, lanes, f.binary);
    if (!VectorMath::present(variant)) continue;
    names.push_back(std::string(kVectorMathPrefix) + f.name);
    const llvm::StringRef scalar = names.back();
    names.push_back(variant);
    descs.push_back({scalar, names.back(), llvm::ElementCount::getFixed(lanes)});
  }
  tlii->addVectorizableFunctions(descs);
  return tlii;
}

// Defines every `jitc.vm.<libm name>` the module declares: its vector variant applied to the argument in
// every lane, lane 0 returned (or libm itself where libmvec lacks it). Not inlined, so that the vectorizer sees
// the call and widens it to the variant; a scalar call then rounds as the variant's lanes do.
void define_vector_math(llvm::Module& m, const VectorMath& vm) {
  std::vector<llvm::Function*> wrappers;
  for (llvm::Function& f : m)
    if (f.isDeclaration() && f.getName().startswith(llvm::StringRef(kVectorMathPrefix.data(), kVectorMathPrefix.size())))
      wrappers.push_back(&f);
  for (llvm::Function* f : wrappers) {
    const std::string libm = f->getName().drop_front(kVectorMathPrefix.size()).str();
    llvm::Type* t = f->getReturnType();
    f->addFnAttr(llvm::Attribute::NoInline);  // external: interprocedural passes keep its signature for the vectorizer
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(m.getContext(), "entry", f));
    std::vector<llvm::Value*> args;
    for (llvm::Argument& a : f->args()) args.push_back(&a);
    const int lanes = vm.lanes(t);
    if (vm.isa == 0 || !VectorMath::present(vm.variant(libm, lanes, args.size() == 2))) {
      b.CreateRet(b.CreateCall(m.getOrInsertFunction(libm, f->getFunctionType()), args));
      continue;
    }
    auto* vector = llvm::FixedVectorType::get(t, static_cast<unsigned>(lanes));
    std::vector<llvm::Type*> params(args.size(), vector);
    for (auto& a : args) a = b.CreateVectorSplat(static_cast<unsigned>(lanes), a);
    llvm::FunctionCallee variant =
        m.getOrInsertFunction(vm.variant(libm, lanes, args.size() == 2), llvm::FunctionType::get(vector, params, false));
    if (auto* declared = llvm::dyn_cast<llvm::Function>(variant.getCallee())) {
      declared->setDoesNotAccessMemory();
      declared->setDoesNotThrow();
      declared->setWillReturn();
    }
    b.CreateRet(b.CreateExtractElement(b.CreateCall(variant, args), uint64_t{0}));
  }
}

// O3's per-module pipeline less what jitc's kernels never need: they are loops over buffers with no
// calls but vector math, no coroutines, OpenMP, globals, switches, memcpys or tail calls, so the
// interprocedural passes, jump threading, correlated propagation, loop idiom and distribution, non-trivial
// unswitching, memcpy and dead-store passes go; the rest keeps O3's order (inlining of the kernels' bodies,
// the simplifications before full unrolling, then the vectorizers with their vector-math mappings, the
// unroller of loops of known trip count, and the clean-ups after them). Same kernels' speed, a third less
// `opt` time (RESULTS.md, session 40).
constexpr const char* kKernelPipeline =
    "function(lower-expect,simplifycfg,sroa,early-cse),"
    "cgscc(inline,function(sroa,early-cse<memssa>,simplifycfg,instcombine,reassociate,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,loop-rotate,licm<allowspeculation>,"
    "simple-loop-unswitch<trivial>),"
    "simplifycfg,instcombine,loop(indvars,loop-deletion,loop-unroll-full),sroa,gvn,instcombine,adce,loop-mssa(licm<allowspeculation>),"
    "simplifycfg,instcombine)),"
    "globaldce,"
    "function(float2int,loop(loop-rotate),inject-tli-mappings,loop-vectorize,loop-load-elim,instcombine,simplifycfg,slp-vectorizer,"
    "vector-combine,instcombine,loop-unroll<O3>,transform-warning,sroa,instcombine,loop-mssa(licm<allowspeculation>),"
    "alignment-from-assumptions,instsimplify,div-rem-pairs,simplifycfg)";

// One LLJIT per process, created on first use: libjitc loads and runs without touching LLVM otherwise.
struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> machine_builder;
  std::unique_ptr<llvm::TargetMachine> machine;  // the data layout, triple and features every module shares
  VectorMath vector_math;
  std::unique_ptr<llvm::TargetLibraryInfoImpl> library;
  std::mutex mutex;  // LLJIT: dylibs added, looked up and removed
  std::atomic<uint64_t> next_dylib{0};

  static Jit& get() {
    static Jit* jit = [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
      auto* j = new Jit();
      auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
      if (!builder) throw CompileError("jitc: LLVM cannot describe this host: " + to_string(builder.takeError()));
      builder->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
      j->machine_builder = std::make_unique<llvm::orc::JITTargetMachineBuilder>(*builder);
      auto machine = builder->createTargetMachine();
      if (!machine) throw CompileError("jitc: LLVM target machine: " + to_string(machine.takeError()));
      j->machine = std::move(*machine);
      j->vector_math = host_vector_math(j->machine->getTargetFeatureString().str());
      j->library = vector_library(j->machine->getTargetTriple(), j->vector_math);
      auto lljit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*builder)).create();
      if (!lljit) throw CompileError("jitc: creating the ORC JIT failed: " + to_string(lljit.takeError()));
      j->lljit = std::move(*lljit);
      return j;
    }();
    return *jit;
  }

  // A TargetMachine is not thread-safe: each compile has its own, so that modules compile at once.
  std::unique_ptr<llvm::TargetMachine> new_machine() const {
    auto made = machine_builder->createTargetMachine();
    if (!made) throw CompileError("jitc: LLVM target machine: " + to_string(made.takeError()));
    return std::move(*made);
  }

  void optimize(llvm::Module& m, llvm::TargetMachine& target) const {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::PassBuilder pb(&target, tuning);
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(*library); });  // before the defaults
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cam, mam);
    llvm::ModulePassManager passes;
    if (auto error = pb.parsePassPipeline(passes, kKernelPipeline))
      throw CompileError("jitc: LLVM pass pipeline: " + to_string(std::move(error)));
    passes.run(m, mam);
  }
};

// The code of one program: one JITDylib per object (a function name is defined in one of them).
class OrcModule final : public CpuModule {
 public:
  OrcModule(std::vector<llvm::orc::JITDylib*> dylibs, std::string ir, std::string assembly, std::string object)
      : dylibs_(std::move(dylibs)), ir_(std::move(ir)), assembly_(std::move(assembly)), object_(std::move(object)) {}
  ~OrcModule() override {
    auto& jit = Jit::get();
    std::lock_guard<std::mutex> lock(jit.mutex);
    for (auto* dylib : dylibs_) llvm::consumeError(jit.lljit->getExecutionSession().removeJITDylib(*dylib));
  }
  void* symbol(const std::string& name) const override {
    // The first lookup compiles the module on LLJIT's one TargetMachine, which is not thread-safe.
    auto& jit = Jit::get();
    std::lock_guard<std::mutex> lock(jit.mutex);
    std::string error;
    for (auto* dylib : dylibs_) {
      auto address = jit.lljit->lookup(*dylib, name);
      if (address) return address->toPtr<void*>();
      error = to_string(address.takeError());
    }
    throw CompileError(fmt::format("jitc: ORC could not link {}: {}", name, error));
  }
  const std::string& optimized_ir() const override { return ir_; }
  const std::string& assembly() const override { return assembly_; }
  const std::string& object() const override { return object_; }

 private:
  std::vector<llvm::orc::JITDylib*> dylibs_;
  std::string ir_, assembly_, object_;
};

// Host code of an optimized module, as the bytes of a relocatable object (what the disk cache keeps).
std::string emit_file(const llvm::Module& m, llvm::TargetMachine& machine, llvm::CodeGenFileType type) {
  auto copy = llvm::CloneModule(m);
  llvm::SmallString<0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr, type)) throw CompileError("jitc: LLVM cannot emit code for this target");
  passes.run(*copy);
  return std::string(bytes.str());
}

// A JITDylib of its own for one module (its symbols cannot clash with another's, and removing it frees
// the code), resolving the libm/libmvec functions kernels call from the process. Under the JIT's lock.
llvm::orc::JITDylib& new_dylib(Jit& jit, const std::string& name) {
  auto dylib = jit.lljit->createJITDylib(fmt::format("{}.{}", name, jit.next_dylib++));
  if (!dylib) throw CompileError("jitc: ORC: " + to_string(dylib.takeError()));
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit.lljit->getDataLayout().getGlobalPrefix());
  if (!process) throw CompileError("jitc: ORC: " + to_string(process.takeError()));
  dylib->addGenerator(std::move(*process));
  return *dylib;
}

// Each object in a dylib of its own: every object defines the jitc.vm.* wrappers its kernels call.
std::unique_ptr<CpuModule> add_objects(Jit& jit, const std::string& name, const std::vector<std::string>& objects, std::string ir,
                                       std::string assembly) {
  std::vector<llvm::orc::JITDylib*> dylibs;
  for (const auto& object : objects) {
    llvm::orc::JITDylib& dylib = new_dylib(jit, name);
    dylibs.push_back(&dylib);
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, name);
    if (auto error = jit.lljit->addObjectFile(dylib, std::move(buffer))) {
      for (auto* added : dylibs) llvm::consumeError(jit.lljit->getExecutionSession().removeJITDylib(*added));
      throw CompileError(fmt::format("jitc: ORC could not load the code of {}: {}", name, to_string(std::move(error))));
    }
  }
  return std::make_unique<OrcModule>(std::move(dylibs), std::move(ir), std::move(assembly), objects.size() == 1 ? objects[0] : "");
}

// The function whose body holds line `line_number` (1-based) of `ir`; "?" outside every function.
std::string function_at_line(const std::string& ir, int line_number) {
  std::string function = "?";
  size_t start = 0;
  for (int line = 1; line <= line_number && start < ir.size(); ++line) {
    const size_t end = std::min(ir.find('\n', start), ir.size());
    const std::string_view text(ir.data() + start, end - start);
    if (text.rfind("define ", 0) == 0) {
      const size_t at = text.find('@'), paren = text.find('(', at);
      if (at != std::string_view::npos && paren != std::string_view::npos) function = std::string(text.substr(at + 1, paren - at - 1));
    } else if (text == "}") {
      function = "?";
    }
    start = end + 1;
  }
  return function;
}

// Invalid IR that parses (operand types, dominance) would crash the optimizer: LLVM's verifier names the
// function at fault instead.
void verify_functions(const llvm::Module& module, const std::string& name) {
  for (const llvm::Function& f : module) {
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyFunction(f, &os))
      throw CompileError(fmt::format("LLVM rejected the IR of {} in function @{}: {}", name, f.getName().str(), os.str()));
  }
}

}  // namespace

CpuObject compile_cpu_object(const std::string& ir_text, const std::string& name, bool want_assembly) {
  auto& jit = Jit::get();
  auto context = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diagnostic;
  auto module = llvm::parseIR(llvm::MemoryBufferRef(ir_text, name), diagnostic, *context);
  if (!module) {
    throw CompileError(fmt::format("LLVM rejected the IR of {} in function @{}: {}", name,
                                   function_at_line(ir_text, diagnostic.getLineNo()), diagnostic.getMessage().str()));
  }
  verify_functions(*module, name);
  define_vector_math(*module, jit.vector_math);
  module->setDataLayout(jit.machine->createDataLayout());
  module->setTargetTriple(jit.machine->getTargetTriple().str());
  const std::unique_ptr<llvm::TargetMachine> target = jit.new_machine();
  jit.optimize(*module, *target);
  std::string optimized;
  llvm::raw_string_ostream os(optimized);
  module->print(os, nullptr);
  std::string assembly = want_assembly ? emit_file(*module, *target, llvm::CGFT_AssemblyFile) : std::string();
  return {emit_file(*module, *target, llvm::CGFT_ObjectFile), os.str(), std::move(assembly)};
}

std::unique_ptr<CpuModule> compile_cpu_module(const std::string& ir_text, const std::string& name, bool want_assembly) {
  CpuObject compiled = compile_cpu_object(ir_text, name, want_assembly);
  auto& jit = Jit::get();
  std::lock_guard<std::mutex> lock(jit.mutex);
  return add_objects(jit, name, {compiled.object}, std::move(compiled.optimized_ir), std::move(compiled.assembly));
}

std::unique_ptr<CpuModule> load_cpu_objects(const std::vector<std::string>& objects, const std::string& name) {
  auto& jit = Jit::get();
  std::lock_guard<std::mutex> lock(jit.mutex);
  return add_objects(jit, name, objects, "", "");
}

bool cpu_jit_available() { return true; }

// The vector library as the JIT's set-up chose it (and loaded it), not whether libmvec is loaded now:
// a build on another thread asking during that set-up saw "none", and its entries were keyed apart.
std::string cpu_codegen_identity() {
  const Jit& jit = Jit::get();
  return fmt::format("llvm {} | {} | vector library {}", LLVM_VERSION_STRING, cpu_target_description(),
                     jit.vector_math.isa != 0 ? "libmvec" : "none");
}

std::string cpu_target_description() {
  auto& jit = Jit::get();
  return fmt::format("{} {} {}", jit.machine->getTargetTriple().str(), jit.machine->getTargetCPU().str(),
                     jit.machine->getTargetFeatureString().str());
}

}  // namespace jitc::inductor::cpu
