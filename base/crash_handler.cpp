// Linked into the saddlescope binary and every test executable: a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints where it
// happened before the process dies: the faulting address, the program counter as object+offset
// (feed it to `addr2line -f -C -e OBJECT OFFSET`) with the nearest exported symbol, and a backtrace.
// It runs on its own stack, so a stack overflow is reported too.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

void describe(const char* label, void* pc) {
  Dl_info info{};
  char line[512];
  if (dladdr(pc, &info) && info.dli_fname) {
    std::snprintf(line, sizeof line, "%s %s+0x%lx (%s)\n", label, info.dli_fname,
                  static_cast<unsigned long>(static_cast<char*>(pc) - static_cast<char*>(info.dli_fbase)),
                  info.dli_sname ? info.dli_sname : "?");
  } else {
    std::snprintf(line, sizeof line, "%s %p\n", label, pc);
  }
  (void)!write(2, line, std::strlen(line));
}

void on_crash(int sig, siginfo_t* si, void* context) {
  char line[256];
  auto* uc = static_cast<ucontext_t*>(context);
  void* pc = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
  void* sp = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RSP]);
  std::snprintf(line, sizeof line, "\n*** crashed: %s at address %p (stack pointer %p)\n", strsignal(sig),
                si->si_addr, sp);
  (void)!write(2, line, std::strlen(line));
  describe("pc", pc);
  // A call through a null (or wild) function pointer leaves pc useless; the caller's return address is
  // then on top of the stack.
  Dl_info pc_info{};
  if (pc == nullptr || !dladdr(pc, &pc_info)) describe("called from", *static_cast<void**>(sp));
  void* frames[64];
  int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) describe("  at", frames[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

const bool installed = [] {
  static char alt_stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
  return true;
}();

}  // namespace
