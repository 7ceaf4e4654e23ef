/*
 * disaggsim: a cut-through fabric switch (ToR or spine) with precomputed port tables.
 */
#ifndef DISAGGSIM_FABRIC_SWITCH_H
#define DISAGGSIM_FABRIC_SWITCH_H

#include "fabric-net-device.h"
#include "fabric-shared-buffer.h"

#include "ns3/object.h"

#include <vector>

namespace ns3
{

/**
 * \brief An L2 fabric switch: no IP, no routing protocol, no queue discs.
 *
 * Forwarding is a table lookup: dst host -> ECMP group (a list of egress ports).  A group of
 * one port is a direct route (ToR to its own hosts, spine to the destination rack); a
 * larger group is spread per flow by FabricHeader::flowHash modulo the group size (per-flow
 * ECMP; ToR uplinks to the spines).  Frames are forwarded the moment they are delivered
 * (cut-through: head arrival + switching delay); the egress transmission may not start
 * before tail_in + switching delay - tx_time_out, so a faster egress never underruns.
 * See topologies/doc/clos.md "Timing".
 *
 * Buffer: by default each port's queue has only its own limit (FabricQueue::MaxBytes).  With
 * SharedBufferBytes > 0, or a buffer given to SetSharedBuffer (a memory-management unit such
 * as SwitchMmu), every port's queue also draws from that one pool (FabricSharedBuffer), and
 * each forwarded frame is charged to the port it came in through
 * (FabricQueueItem::ingressPort).
 */
class FabricSwitch : public Object, public FabricFrameSink
{
  public:
    static TypeId GetTypeId ();
    FabricSwitch ();
    ~FabricSwitch () override;

    /// Add an egress/ingress port; \returns its port index.  The port becomes cut-through
    /// with this switch's SwitchingDelay and hands received frames to ReceiveFrame().
    uint32_t AddPort (Ptr<FabricNetDevice> port);

    Ptr<FabricNetDevice> GetPort (uint32_t index) const;

    uint32_t GetNPorts () const
    {
        return static_cast<uint32_t> (m_ports.size ());
    }

    /// Define the egress ports towards \p dstHost (hosts 0..n-1 must all be set).
    void SetRoute (uint32_t dstHost, const std::vector<uint32_t>& ports);

    /// \returns the ECMP group (egress port indices) towards \p dstHost.
    const std::vector<uint32_t>& GetRoute (uint32_t dstHost) const;

    /// \returns the egress port index a frame with \p header takes.
    uint32_t SelectPort (const FabricHeader& header) const;

    Time GetSwitchingDelay () const
    {
        return m_switchingDelay;
    }

    /// Make \p buffer the packet memory of every port, present and future (nullptr: none).
    void SetSharedBuffer (Ptr<FabricSharedBuffer> buffer);

    /// \returns the shared buffer, or nullptr (each port has only its own queue limit).
    Ptr<FabricSharedBuffer> GetSharedBuffer () const
    {
        return m_sharedBuffer;
    }

    uint64_t GetForwardedPackets () const
    {
        return m_forwarded;
    }

    /// Forward a frame that arrived at \p inPort (FabricFrameSink): its packet reference moves
    /// into the egress port's queue.
    void ReceiveFrame (FabricNetDevice* inPort, Ptr<Packet>& packet, const FabricHeader& header,
                       Time txTimeIn, Time now, uint32_t wireBytes) override;

  protected:
    void DoDispose () override;

  private:
    Time m_switchingDelay;
    uint32_t m_ecmpSalt{0};
    uint64_t m_sharedBufferBytes{0};
    Ptr<FabricSharedBuffer> m_sharedBuffer;
    std::vector<Ptr<FabricNetDevice>> m_ports;
    std::vector<uint32_t> m_groupOfHost;         // dst host -> index into m_groups
    std::vector<std::vector<uint32_t>> m_groups; // distinct ECMP groups
    /// Per destination host: its group as (first, size) in m_flatPorts, built at the first
    /// SelectPort after a SetRoute (one array index per forwarded frame).
    struct FlatRoute
    {
        uint32_t first{0};
        uint32_t size{0};
    };

    void BuildFlatRoutes () const;

    mutable std::vector<FlatRoute> m_flatRoutes;
    mutable std::vector<uint32_t> m_flatPorts;
    mutable bool m_flatDirty{true};
    uint64_t m_forwarded{0};
};

} // namespace ns3

#endif // DISAGGSIM_FABRIC_SWITCH_H
