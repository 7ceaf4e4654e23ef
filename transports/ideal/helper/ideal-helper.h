/*
 * disaggsim: the Ideal reference as a FlowTransport (protocol name "ideal").
 */
#ifndef DISAGGSIM_IDEAL_HELPER_H
#define DISAGGSIM_IDEAL_HELPER_H

#include "topologies/model/flow-transport.h"

#include <vector>

namespace ns3
{

/**
 * \brief The lower bound the transport papers compare against (transports/pfabric/doc/
 * pfabric.md §7): the fabric as one big switch whose ports are the hosts' access links,
 * flows scheduled by SRPT (IdealSrptCompletions), no packets.
 *
 * A flow's work is its serialization time alone at the access rate, packet by packet as
 * ClosTopology::IdealFct counts it (ceil(size / MssBytes) packets of payload +
 * PerPacketHeaderBytes + 18 B).  Its FCT = (time its work completes under SRPT) - start +
 * (IdealFct - work): the second term is the path's fixed latency (propagation, switching,
 * re-serialization), so a flow that never waits finishes at exactly its ideal FCT (slowdown
 * 1.0).  All flows must be added before the simulation runs; completions are computed at
 * time 0 and reported by FlowFinished at their times.
 */
class IdealFlowTransport : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    IdealFlowTransport ();
    ~IdealFlowTransport () override;

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;

    /// \returns the serialization work of \p sizeBytes at the access rate (see class doc).
    Time GetWork (uint64_t sizeBytes) const;

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    void Compute ();

    uint32_t m_headerBytes{22};
    uint32_t m_mssBytes{1460};
    Ptr<ClosTopology> m_topology;
    std::vector<FlowSpec> m_flows;
    bool m_scheduled{false};
    bool m_computed{false};
};

} // namespace ns3

#endif // DISAGGSIM_IDEAL_HELPER_H
