/*
 * disaggsim: the pFabric stack of one host: its flows' endpoints on the host's fabric port.
 */
#ifndef DISAGGSIM_PFABRIC_HOST_H
#define DISAGGSIM_PFABRIC_HOST_H

#include "topologies/model/fabric-host.h"

#include "ns3/nstime.h"
#include "ns3/object.h"

#include <tsl/robin_map.h>

namespace ns3
{

class FabricNetDevice;
class Packet;
class PfabricQueue;
class PfabricReceiver;
class PfabricSender;

/**
 * \brief Puts pFabric packets on a host's FabricNetDevice and hands arriving ones to the
 * flow's sender (ACKs) or receiver (data, probes), by flow id.
 *
 * pFabric runs directly on the fabric port (the FabricHost base: SendFabric and the fabric
 * receive callback): no IPv4 stack, no sockets.  The host's egress queue is the device's
 * (a PfabricQueue, as in YAPS where host NICs have the pFabric discipline too).
 */
class PfabricHost : public FabricHost
{
  public:
    static TypeId GetTypeId ();
    PfabricHost ();
    ~PfabricHost () override;

    /// Attach to \p device, the port of host \p hostIndex (rack-major host number).
    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex);

    void AddSender (uint64_t flowId, Ptr<PfabricSender> sender);
    void AddReceiver (uint64_t flowId, Ptr<PfabricReceiver> receiver);
    /// Forget a finished flow's endpoints (its late packets are then ignored).
    void RemoveSender (uint64_t flowId);
    void RemoveReceiver (uint64_t flowId);

    /// \returns true if a data packet of flow \p flowId sent by this host still waits in the
    /// host's own NIC queue (not yet on the wire; Linux tcp_output.c skb_still_in_host_queue).
    bool NicHoldsFlow (uint64_t flowId) const;

  protected:
    void DoDispose () override;
    void DoSetup () override;
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    Ptr<PfabricQueue> m_nicQueue; ///< the device's queue if it is a PfabricQueue
    // Flows of this host by flow id, looked up per received frame: open addressing, so a
    // lookup is one probe into a flat array (std::unordered_map's modulo and node chase were
    // 1.3 % of a heavy incast, bench/RESULTS.md).
    tsl::robin_map<uint64_t, Ptr<PfabricSender>> m_senders;
    tsl::robin_map<uint64_t, Ptr<PfabricReceiver>> m_receivers;
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_HOST_H
