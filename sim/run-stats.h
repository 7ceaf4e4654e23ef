/*
 * disaggsim: the STATS.json of one run (counters, resources, resolved configuration).
 */
#ifndef DISAGGSIM_SIM_RUN_STATS_H
#define DISAGGSIM_SIM_RUN_STATS_H

#include "topologies/model/clos-topology.h"
#include "topologies/model/flow-transport.h"

#include <string>
#include <utility>
#include <vector>

namespace disaggsim
{

/// Counters of one run, read from the fabric after Simulator::Run().
struct RunStats
{
    double wallSeconds{0};
    int64_t simTimeNs{0};
    uint64_t events{0};
    uint64_t dataPacketsDelivered{0};
    uint64_t packetsDelivered{0};
    uint64_t packetsDropped{0};
    uint64_t ceMarks{0};
    uint64_t pfcFrames{0};          //!< PFC frames sent by every port (lossless fabric)
    int64_t pausedNs{0};            //!< time paused, summed over ports and classes
    uint64_t peakIngressBytes{0};   //!< largest (ingress port, class) occupancy of any switch
    uint32_t longestPauseChain{0};  //!< PfcMonitor::GetLongestPauseChain
    uint64_t flows{0};
    uint64_t flowsFinished{0};
    long peakRssKb{0};
};

/// Sum the fabric counters: frames (all, and with payload) received by hosts, drops and CE
/// marks over every queue (switch ports and host NICs); on the lossless fabric also PFC frames
/// sent, time paused, the peak ingress occupancy and the longest pause chain.
void CollectFabricStats (ns3::Ptr<const ns3::ClosTopology> topology, RunStats& stats);

/// \returns the process's peak resident set size in KiB (getrusage ru_maxrss).
long PeakRssKb ();

/// \returns every attribute (path "ns3::Type::Name" -> current default, serialized) of
/// \p types, skipping pointer and callback attributes.
std::vector<std::pair<std::string, std::string>> ResolvedAttributes (
    const std::vector<ns3::TypeId>& types);

/**
 * \returns the STATS.json text: the RunStats fields (wall_s, sim_time_ns, events,
 * data_packets_delivered, packets_delivered, packets_dropped, ce_marks, pfc_frames, paused_ns,
 * peak_ingress_bytes, longest_pause_chain (these four 0 on the lossy fabric), flows,
 * flows_finished,
 * peak_rss_kb), "transport" (the transport's own counters), and "config" with the driver options,
 * "derived" values and "attributes".
 */
std::string StatsJson (const RunStats& stats,
                       const std::vector<std::pair<std::string, std::string>>& transportStats,
                       const std::vector<std::pair<std::string, std::string>>& options,
                       const std::vector<std::pair<std::string, std::string>>& derived,
                       const std::vector<std::pair<std::string, std::string>>& attributes);

} // namespace disaggsim

#endif // DISAGGSIM_SIM_RUN_STATS_H
