// Verilator harness for the systolic Accelerator (docs: systolic.sim.verilator.harness).
//
// Usage: sim COMMANDS MEMORY_IN MEMORY_OUT REPORT WATCHDOG [STALL_LIMIT]
//
// COMMANDS is a sequence of records of (1 + CMD_WORDS) little-endian uint32 words: a flags word
// (bit 0: HALT) and the command integer, least significant word first. MEMORY_IN is the
// external memory image (raw bytes); after the run the image is written to MEMORY_OUT. REPORT
// is a text file: "status done|watchdog|error", "cycle N" (the cycle the run stopped in),
// "last_issue I C" (the latest command issued and its cycle; I = -1 for none), "accepted N",
// "message ..." (errors only), one "port NAME W0 W1 ..." line per counter port (hex words,
// least significant first) and one "time I ACCEPT ISSUE COMPLETE" line per command (-1 where
// it never happened).
//
// The simulated top module is the wrapper of systolic.sim.verilator.ports: it registers the
// inputs rst, start, i_instr and (MEM_LATENCY >= 1) i_mem_resp, so the harness sets each cycle's
// inputs before the clock edge that ends the previous cycle, and one evaluation after the edge
// settles the cycle (the evaluation with the clock low is cheap: no design logic hangs on the
// wrapper's inputs). With MEM_LATENCY 0 the response is a direct input set in the request's
// cycle.
//
// Cycle numbering: cycle 0 is the cycle `start` is high (after reset). In every cycle the
// design's inputs are the ones set before the previous clock edge; the harness samples the
// handshakes and strobes (the values of that cycle), sets the next cycle's inputs and raises
// the clock. Command i is offered from the cycle after command i-1 was taken. The run ends
// when `done` is seen, or with status "watchdog" in cycle WATCHDOG when HALT has not been
// accepted by cycle WATCHDOG - 1, or with status "stalled" when STALL_LIMIT (optional, 0 =
// none) cycles passed without an instruction accepted, issued or completed before HALT. The
// memory model takes every read request (ready = 1), answers it exactly MEM_LATENCY cycles
// later with the bytes it holds at request time (bytes beyond the image read as 0), is always
// ready for writes and applies their strobed bytes in the cycle they are taken. Unaligned
// beats, writes beyond the image and trace strobes that name no accepted instruction end the
// run with status "error". While it runs, the harness prints "cycle N" on standard output
// every 65536 cycles (progress for long runs).
//
// The port names and widths come from the generated header harness_ports.h.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "verilated.h"
#include "harness_ports.h"

namespace {

// -- access to ports of any width, as little-endian 32-bit words ------------------------------

template <typename T>
inline void get_words(const T& port, uint32_t* words, int count) {
    const uint64_t value = static_cast<uint64_t>(port);
    for (int i = 0; i < count; ++i) words[i] = i < 2 ? static_cast<uint32_t>(value >> (32 * i)) : 0;
}

template <std::size_t N>
inline void get_words(const VlWide<N>& port, uint32_t* words, int count) {
    for (int i = 0; i < count; ++i) words[i] = i < static_cast<int>(N) ? port.at(i) : 0;
}

template <typename T>
inline void set_words(T& port, const uint32_t* words, int count) {
    uint64_t value = count > 0 ? words[0] : 0;
    if (count > 1) value |= static_cast<uint64_t>(words[1]) << 32;
    port = static_cast<T>(value);
}

template <std::size_t N>
inline void set_words(VlWide<N>& port, const uint32_t* words, int count) {
    for (int i = 0; i < static_cast<int>(N); ++i) port.at(i) = i < count ? words[i] : 0;
}

template <typename T>
inline uint64_t get_u64(const T& port) {
    uint32_t words[2];
    get_words(port, words, 2);
    return words[0] | (static_cast<uint64_t>(words[1]) << 32);
}

inline uint64_t bit_field(const uint32_t* words, int lsb, int width) {
    uint64_t value = 0;
    for (int bit = 0; bit < width; ++bit) {
        const int at = lsb + bit;
        value |= static_cast<uint64_t>((words[at / 32] >> (at % 32)) & 1u) << bit;
    }
    return value;
}

constexpr int words_for(int bits) { return (bits + 31) / 32; }

// Progress: "cycle N" on standard output every PROGRESS_CYCLES cycles (a power of two).
constexpr uint64_t PROGRESS_CYCLES = uint64_t{1} << 16;

bool read_file(const char* path, std::vector<uint8_t>& out) {
    FILE* file = std::fopen(path, "rb");
    if (!file) return false;
    std::fseek(file, 0, SEEK_END);
    const long size = std::ftell(file);
    std::fseek(file, 0, SEEK_SET);
    out.resize(static_cast<size_t>(size));
    const size_t got = size ? std::fread(out.data(), 1, out.size(), file) : 0;
    std::fclose(file);
    return got == out.size();
}

struct Times {
    int64_t accept = -1, issue = -1, complete = -1;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6 && argc != 7) {
        std::fprintf(stderr, "usage: %s COMMANDS MEMORY_IN MEMORY_OUT REPORT WATCHDOG "
                     "[STALL_LIMIT]\n", argv[0]);
        return 2;
    }
    std::vector<uint8_t> command_bytes, memory;
    if (!read_file(argv[1], command_bytes) || !read_file(argv[2], memory)) {
        std::fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    const uint64_t watchdog = std::strtoull(argv[5], nullptr, 10);
    const uint64_t stall_limit = argc == 7 ? std::strtoull(argv[6], nullptr, 10) : 0;
    constexpr int record_words = 1 + CMD_WORDS;
    const size_t count = command_bytes.size() / (4 * record_words);
    std::vector<uint32_t> commands(count * record_words);
    if (count) std::memcpy(commands.data(), command_bytes.data(), commands.size() * 4);

    VerilatedContext context;
    context.threads(1);
    TOP_CLASS design_object{&context};
    TOP_CLASS* top = &design_object;

    // Reset for three edges (the wrapper's registered reset starts high); the third one loads
    // cycle 0's inputs, reset low included, into the wrapper.
    top->clk = 0;
    top->rst = 1;
    top->P_START = 0;
    top->P_INSTR_VALID = 0;
    top->P_RESP_VALID = 0;
    top->eval();
    auto edge = [&]() {
        top->clk = 1;
        top->eval();
        top->clk = 0;
    };
    for (int i = 0; i < 3; ++i) {
        if (i == 2) {
            top->rst = 0;
            top->P_START = 1;
            if (count) {
                top->P_INSTR_VALID = 1;
                set_words(top->P_INSTR_PAYLOAD, &commands[1], CMD_WORDS);
            }
        }
        edge();
        top->eval();
    }

    constexpr int resp_words = words_for(8 * BUS_BYTES);
    constexpr int write_words = words_for(WRITE_BITS);
    constexpr int slots = MEM_LATENCY > 0 ? MEM_LATENCY : 1;
    std::vector<uint32_t> pending(static_cast<size_t>(slots) * resp_words, 0);
    std::vector<uint8_t> pending_valid(slots, 0);
    uint32_t resp[resp_words];
    uint32_t write_beat[write_words];
    const uint64_t memory_size = memory.size();

    auto read_beat = [&](uint64_t address, uint32_t* words) {
        uint8_t bytes[4 * resp_words] = {0};
        for (int b = 0; b < BUS_BYTES; ++b) {
            const uint64_t at = address + b;
            bytes[b] = at < memory_size ? memory[at] : 0;
        }
        std::memcpy(words, bytes, sizeof(bytes));
    };

    std::vector<Times> times(count);
    std::vector<int64_t> tag_owner(1u << 16, -1);
    size_t next = 0;          // the next command to offer
    int64_t last_issue = -1;  // the latest command issued
    uint64_t last_issue_cycle = 0;
    std::string status = "watchdog", message;
    uint64_t cycle = 0;

    auto check_aligned = [&](uint64_t address, const char* what) {
        if (address % BUS_BYTES && message.empty()) {
            message = std::string("a ") + what + " beat at external address " +
                      std::to_string(address) + " in cycle " + std::to_string(cycle) +
                      " is not aligned to the " + std::to_string(BUS_BYTES) + "-byte bus";
        }
    };

    auto lookup = [&](uint32_t tag, const char* what) -> int64_t {
        const int64_t index = tag_owner[tag];
        if (index < 0 && message.empty()) {
            message = std::string(what) + " of tag " + std::to_string(tag) + " in cycle " +
                      std::to_string(cycle) + " names no accepted instruction";
        }
        return index;
    };

    bool halted = false;  // HALT was accepted
    uint64_t last_event = 0;  // the latest cycle an instruction was accepted, issued or completed
    for (;; ++cycle) {
        // The wrapper holds this cycle's inputs and the design's outputs are settled.
        if (cycle >= watchdog && !halted) break;  // status stays "watchdog"
        if (stall_limit && !halted && cycle - last_event >= stall_limit) {
            status = "stalled";
            break;
        }

        // Read requests: answered MEM_LATENCY cycles later (in this cycle when it is 0).
        if (top->P_REQ_VALID) {
            uint32_t req[2];
            get_words(top->P_REQ_PAYLOAD, req, 2);
            const uint64_t address = bit_field(req, REQ_ADDR_LSB, 32);
            check_aligned(address, "read");
            if (MEM_LATENCY > 0) {
                const int slot = static_cast<int>(cycle % slots);
                read_beat(address, &pending[slot * resp_words]);
                pending_valid[slot] = 1;
            } else {
                read_beat(address, resp);
                set_words(top->P_RESP_PAYLOAD, resp, resp_words);
                top->P_RESP_VALID = 1;
                top->eval();
            }
        }

        // Write beats.
        if (top->P_WRITE_VALID) {
            get_words(top->P_WRITE_PAYLOAD, write_beat, write_words);
            const uint64_t address = bit_field(write_beat, WRITE_ADDR_LSB, 32);
            check_aligned(address, "write");
            for (int b = 0; b < BUS_BYTES; ++b) {
                if (!bit_field(write_beat, WRITE_STROBE_LSB + b, 1)) continue;
                const uint64_t at = address + b;
                if (at >= memory_size) {
                    if (message.empty()) {
                        message = "write to byte " + std::to_string(at) + " in cycle " +
                                  std::to_string(cycle) + " lies beyond the " +
                                  std::to_string(memory_size) + "-byte memory image";
                    }
                    continue;
                }
                memory[at] = static_cast<uint8_t>(bit_field(write_beat, WRITE_DATA_LSB + 8 * b, 8));
            }
        }

        // Trace strobes ({valid, tag} structs): issues and completions, then this cycle's accept.
#define HARNESS_ISSUE(port, valid_lsb, tag_lsb, tag_bits)                       \
    {                                                                            \
        const uint64_t strobe = get_u64(top->port);                              \
        if ((strobe >> (valid_lsb)) & 1u) {                                      \
            const uint32_t tag = (strobe >> (tag_lsb)) & ((1u << (tag_bits)) - 1u); \
            const int64_t index = lookup(tag, "an issue");                       \
            if (index >= 0) {                                                    \
                times[index].issue = cycle;                                      \
                last_event = cycle;                                              \
                if (index > last_issue) last_issue = index, last_issue_cycle = cycle; \
            }                                                                    \
        }                                                                        \
    }
        FOR_EACH_ISSUE(HARNESS_ISSUE)
#undef HARNESS_ISSUE
#define HARNESS_COMPLETE(port, valid_lsb, tag_lsb, tag_bits)                    \
    {                                                                            \
        const uint64_t strobe = get_u64(top->port);                              \
        if ((strobe >> (valid_lsb)) & 1u) {                                      \
            const uint32_t tag = (strobe >> (tag_lsb)) & ((1u << (tag_bits)) - 1u); \
            const int64_t index = lookup(tag, "a completion");                   \
            if (index >= 0) {                                                    \
                times[index].complete = cycle;                                   \
                last_event = cycle;                                              \
                tag_owner[tag] = -1;                                             \
            }                                                                    \
        }                                                                        \
    }
        FOR_EACH_COMPLETE(HARNESS_COMPLETE)
#undef HARNESS_COMPLETE
        bool taken = false;
        if (next < count && top->P_INSTR_READY) {  // offered in every cycle while next < count
            times[next].accept = cycle;
            last_event = cycle;
            taken = true;
            bool accepted = false;
            uint32_t accepted_tag = 0;
#define HARNESS_ACCEPT(port, valid_lsb, tag_lsb, tag_bits)                          \
    {                                                                            \
        const uint64_t strobe = get_u64(top->port);                              \
        accepted = (strobe >> (valid_lsb)) & 1u;                                 \
        accepted_tag = (strobe >> (tag_lsb)) & ((1u << (tag_bits)) - 1u);        \
    }
            FOR_EACH_ACCEPT(HARNESS_ACCEPT)
#undef HARNESS_ACCEPT
            if (commands[next * record_words] & 1u) {  // HALT: issued and complete when taken
                times[next].issue = cycle;
                times[next].complete = cycle;
                halted = true;
            } else if (accepted) {
                tag_owner[accepted_tag] = static_cast<int64_t>(next);
            } else if (message.empty()) {
                message = "instruction " + std::to_string(next) + " was taken in cycle " +
                          std::to_string(cycle) + " without a trace.accept strobe";
            }
            ++next;
        }
        if (!message.empty()) {
            status = "error";
            break;
        }
        if (cycle > 0 && top->P_DONE) {
            status = "done";
            break;
        }

        // The next cycle's inputs, registered by the wrapper at this edge.
        if (cycle == 0) top->P_START = 0;
        if (taken) {
            if (next < count) {
                set_words(top->P_INSTR_PAYLOAD, &commands[next * record_words + 1], CMD_WORDS);
            } else {
                top->P_INSTR_VALID = 0;
            }
        }
        if (MEM_LATENCY > 0) {
            const int slot = static_cast<int>((cycle + 1) % slots);
            if (pending_valid[slot]) {
                set_words(top->P_RESP_PAYLOAD, &pending[slot * resp_words], resp_words);
                pending_valid[slot] = 0;
                top->P_RESP_VALID = 1;
            } else {
                top->P_RESP_VALID = 0;
            }
        }
        edge();
        if (MEM_LATENCY == 0) top->P_RESP_VALID = 0;
        top->eval();  // the clock low (and with MEM_LATENCY 0, no response yet)
        if ((cycle & (PROGRESS_CYCLES - 1)) == PROGRESS_CYCLES - 1) {
            std::printf("cycle %llu\n", static_cast<unsigned long long>(cycle + 1));
            std::fflush(stdout);
        }
    }
    top->final();

    FILE* out = std::fopen(argv[3], "wb");
    if (!out || (memory_size && std::fwrite(memory.data(), 1, memory.size(), out) != memory.size())) {
        std::fprintf(stderr, "cannot write %s\n", argv[3]);
        return 2;
    }
    std::fclose(out);
    FILE* report = std::fopen(argv[4], "w");
    if (!report) {
        std::fprintf(stderr, "cannot write %s\n", argv[4]);
        return 2;
    }
    std::fprintf(report, "status %s\ncycle %llu\nlast_issue %lld %llu\naccepted %zu\n",
                 status.c_str(), static_cast<unsigned long long>(cycle),
                 static_cast<long long>(last_issue),
                 static_cast<unsigned long long>(last_issue_cycle), next);
    if (!message.empty()) std::fprintf(report, "message %s\n", message.c_str());
#define HARNESS_COUNTER(name, port, bits)                                   \
    {                                                                       \
        uint32_t words[words_for(bits)];                                    \
        get_words(top->port, words, words_for(bits));                       \
        std::fprintf(report, "port %s", name);                              \
        for (int i = 0; i < words_for(bits); ++i)                           \
            std::fprintf(report, " %08x", words[i]);                        \
        std::fprintf(report, "\n");                                         \
    }
    FOR_EACH_COUNTER(HARNESS_COUNTER)
#undef HARNESS_COUNTER
    for (size_t i = 0; i < count; ++i) {
        std::fprintf(report, "time %zu %lld %lld %lld\n", i,
                     static_cast<long long>(times[i].accept),
                     static_cast<long long>(times[i].issue),
                     static_cast<long long>(times[i].complete));
    }
    std::fclose(report);
    return 0;
}
