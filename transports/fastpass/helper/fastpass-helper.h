/*
 * disaggsim: Fastpass as a FlowTransport over the Clos fabric (protocol name "fastpass").
 */
#ifndef DISAGGSIM_FASTPASS_HELPER_H
#define DISAGGSIM_FASTPASS_HELPER_H

#include "topologies/model/flow-start-scheduler.h"
#include "topologies/model/flow-transport.h"
#include "transports/fastpass/model/fastpass-arbiter.h"
#include "transports/fastpass/model/fastpass-host.h"

#include "ns3/node.h"

#include <vector>

namespace ns3
{

/**
 * \brief Installs Fastpass (Perry et al. SIGCOMM'14) on a ClosTopology: a FastpassHost on
 * every host and a FastpassArbiter on a node of its own, attached to the ToR of ArbiterRack
 * (ClosTopology::AttachToTor) (transports/fastpass/doc/fastpass.md).  Hosts request
 * timeslots per destination (FCP, PerDestinationRequests, default) or per flow.
 *
 * Derived at ConfigureFabric/Install (attributes left at 0): the timeslot (one full data
 * frame, MssBytes + 40 B, + GuardBytes at the access rate: §3), the allocation lead (processing
 * latency + the slowest arbiter -> host delivery of an ALLOC frame of a full batch + the
 * serialization of one such frame per host at the arbiter's NIC + the longest host control frame +
 * one timeslot per switch port on the way, for the data frames it may find queued, + the spread
 * of data-path delays at the last port, rounded up to whole timeslots: every allocation arrives
 * before its timeslot) and the retransmit timeout (lead +
 * batch + 3 x ClosTopology::BaseRtt).  Reports divide by ClosTopology::IdealFct (line rate, no
 * arbiter round trip), stated in GetDerivedConfig as fastpass.slowdown_ideal; the fixed lone-flow
 * overhead above it is GetLoneFlowExtraDelay.
 */
class FastpassFlowTransport : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    FastpassFlowTransport ();
    ~FastpassFlowTransport () override;

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    /// fastpass.requests, request_entries, grants, passes, alloc_frames, lost_grants
    /// (arbiter), request_frames_sent, data_packets_sent, retransmissions, late_allocations,
    /// unused_slots, probes, repeated_requests (hosts).
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;
    /**
     * The lone-flow overhead (doc §6): the REQUEST (FCP's AREQ of one destination, 50 B; per
     * flow 40 B) reaches the arbiter at a = start + D(src -> arbiter); the first pass at or after a
     * runs at epoch j = ceil(a / (B T)) and gives the flow timeslots j B + lead, j B + lead + 1,
     * ... (every later pass the next B): packet i leaves at (j B + lead + i) T and crosses the
     * fabric unloaded, except that on the last link it may wait for packet i - 1 (a short last
     * packet catches up with a full one).  \returns finish - start - IdealFct(flow).  Valid
     * after Install.
     */
    Time GetLoneFlowExtraDelay (const FlowSpec& flow) const override;

    Time GetTimeslot () const
    {
        return m_timeslot;
    }

    uint64_t GetLeadSlots () const
    {
        return m_leadSlots;
    }

    uint32_t GetArbiterEndpoint () const
    {
        return m_arbiterEndpoint;
    }

    Ptr<FastpassArbiter> GetArbiter () const
    {
        return m_arbiter;
    }

    Ptr<FastpassHost> GetHostStack (uint32_t host) const
    {
        return m_hosts.at (host);
    }

    /**
     * \returns the unloaded one-way time of one frame of \p wireBytes from endpoint \p from
     * to endpoint \p to (hosts or the arbiter), with the cut-through timing of FabricSwitch:
     * each switch forwards a frame's head s after it arrives, but not so early that it would
     * finish before its tail arrived (+ s).
     */
    Time OneWay (uint32_t from, uint32_t to, uint32_t wireBytes) const;

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    void StartFlow (const FlowSpec& flow);
    /// Wire bytes of the REQUEST (or one-destination AREQ) a lone flow sends.
    uint32_t RequestWireBytes () const;
    void OnReceived (uint64_t flowId);

    uint32_t m_mssBytes{1460};
    Time m_timeslotAttr;
    uint32_t m_guardBytes{94};
    uint32_t m_batchSlots{8};
    Time m_processingLatency;
    Time m_leadAttr;
    Time m_rtoAttr;
    uint32_t m_arbiterRack{0};
    DataRate m_arbiterRateAttr;
    double m_arbiterCableM{4};
    FastpassOrder m_order{FastpassOrder::FEWEST_REMAINING};
    bool m_perDestination{true};
    Time m_requestGapAttr;
    bool m_sendOnArrival{false};
    bool m_spray{false};

    Ptr<ClosTopology> m_topology;
    Ptr<Node> m_arbiterNode;
    Ptr<FastpassArbiter> m_arbiter;
    uint32_t m_arbiterEndpoint{0};
    DataRate m_arbiterRate;
    Time m_arbiterDelay;
    std::vector<Ptr<FastpassHost>> m_hosts;
    std::vector<FlowSpec> m_flows;
    FlowStartScheduler m_starts;
    Time m_timeslot;
    uint64_t m_leadSlots{0};
    Time m_rto;
};

} // namespace ns3

#endif // DISAGGSIM_FASTPASS_HELPER_H
