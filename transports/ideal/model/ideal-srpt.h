/*
 * disaggsim: the Ideal reference: flow-level SRPT over one big switch.
 */
#ifndef DISAGGSIM_IDEAL_SRPT_H
#define DISAGGSIM_IDEAL_SRPT_H

#include <cstdint>
#include <vector>

namespace ns3
{

/**
 * \brief One flow for IdealSrpt: it needs workPs picoseconds of its source's and its
 * destination's port (its wire bytes at the access rate) from startPs on.
 */
struct IdealSrptFlow
{
    int64_t startPs{0};
    uint32_t srcPort{0};
    uint32_t dstPort{0};
    int64_t workPs{0};
};

/**
 * \brief Completion times of flows on one big switch scheduled by SRPT (the "Ideal" of
 * pFabric SIGCOMM'13 §5 and pHost CoNEXT'15 §4; YAPS ext/ideal.cpp IdealArbiter;
 * transports/pfabric/doc/pfabric.md §7).
 *
 * At every arrival and every completion the active flows are ordered by remaining work
 * (ties: earlier start, then lower index) and taken greedily: a flow runs if its source and
 * destination ports are both still free, and then holds both.  A running flow progresses at
 * one picosecond of work per picosecond; the others wait.  The schedule cannot change
 * between events (a running flow's remaining work only falls, so no waiting flow, whose
 * work is frozen, overtakes it), so the result is exact in integer picoseconds.
 *
 * \returns for each flow (same order as \p flows) the time its last bit leaves the switch,
 * in ps.  Flows need workPs > 0 and distinct src/dst ports.  Cost O(E x A log A) for E = 2N
 * events and A active flows.
 */
std::vector<int64_t> IdealSrptCompletions (const std::vector<IdealSrptFlow>& flows);

} // namespace ns3

#endif // DISAGGSIM_IDEAL_SRPT_H
