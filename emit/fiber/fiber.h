// fiber.h: what the C++ emulations of the Metal (emit/metal/emu) and
// Tenstorrent (emit/tt/emu) backends share to run the threads of a
// threadgroup, or the kernels of a core, as fibers of one system thread:
// a stack with a guard page, and the switch from one fiber to another.
//
// On x86-64 a switch pushes the six callee-saved registers on the stack
// being left, saves its stack pointer in *from, loads the other's from to
// and pops its registers (emu_fiber_switch): a few instructions, where
// glibc's swapcontext also saves the signal mask with a system call (and
// AddressSanitizer's interceptor of it clears the shadow of the whole
// stack entered, at every switch). Elsewhere, and with EMU_FIBER_NO_ASM
// defined, the emulations use swapcontext (EMU_FIBER_FAST_SWITCH is 0).
#pragma once

#include <sys/mman.h>

#include <cstddef>

#if defined(__x86_64__) && !defined(EMU_FIBER_NO_ASM)
#define EMU_FIBER_FAST_SWITCH 1
// weak: every translation unit including this header defines it
extern "C" void emu_fiber_switch(void** from, void* to);
asm(R"(
.text
.p2align 4
.weak emu_fiber_switch
.type emu_fiber_switch, @function
emu_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size emu_fiber_switch, .-emu_fiber_switch
.section .note.GNU-stack,"",@progbits
.text
)");

// emu_fiber_start returns the stack pointer that makes the first
// emu_fiber_switch into a fiber whose stack is [stack, stack + bytes)
// start entry: six registers of zeros to pop, then entry's address to
// return to; entry starts as if called, with a null return address at the
// top, 16 bytes from the aligned end.
inline void* emu_fiber_start(void* stack, size_t bytes, void (*entry)()) {
  void** top = reinterpret_cast<void**>(static_cast<char*>(stack) + bytes);
  *--top = nullptr;
  *--top = reinterpret_cast<void*>(entry);
  for (int r = 0; r < 6; ++r) *--top = nullptr;
  return top;
}
#else
#define EMU_FIBER_FAST_SWITCH 0
#endif

// emu_fiber_stack maps a stack of bytes (reserved, not committed) with a
// guard page below it, so that an overflow faults instead of writing
// another fiber's stack; nullptr when the mapping fails.
inline void* emu_fiber_stack(size_t bytes) {
  const size_t page = 4096;
  void* p = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  mprotect(p, page, PROT_NONE);
  return static_cast<char*>(p) + page;
}

// emu_fiber_unmap releases a stack emu_fiber_stack mapped.
inline void emu_fiber_unmap(void* stack, size_t bytes) { munmap(static_cast<char*>(stack) - 4096, bytes + 4096); }
