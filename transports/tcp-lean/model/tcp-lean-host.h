/*
 * disaggsim: the lean TCP stack of one host: its connections' ends on the host's fabric port.
 */
#ifndef DISAGGSIM_TCP_LEAN_HOST_H
#define DISAGGSIM_TCP_LEAN_HOST_H

#include "tcp-lean-receiver.h"
#include "tcp-lean-sender.h"
#include "topologies/model/fabric-host.h"

#include <tsl/robin_map.h>

namespace ns3
{

/**
 * \brief Puts lean TCP frames on a host's FabricNetDevice and hands arriving ones to the
 * flow's sender (ACKs) or receiver (data), by flow id: the connection lookup that a socket
 * demux does by 4-tuple (no IPv4 stack, no sockets; doc/tcp-lean.md §1).
 */
class TcpLeanHost : public FabricHost
{
  public:
    static TypeId GetTypeId ();
    TcpLeanHost ();
    ~TcpLeanHost () override;

    /// Attach to \p device, the port of host \p hostIndex (rack-major host number).
    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex);

    void AddSender (uint64_t flowId, Ptr<TcpLeanSender> sender);
    void AddReceiver (uint64_t flowId, Ptr<TcpLeanReceiver> receiver);
    /// Forget a finished flow's ends (late frames of it are then ignored).
    void RemoveSender (uint64_t flowId);
    void RemoveReceiver (uint64_t flowId);

  protected:
    void DoDispose () override;
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    // open addressing: one probe per received frame (as PfabricHost)
    tsl::robin_map<uint64_t, Ptr<TcpLeanSender>> m_senders;
    tsl::robin_map<uint64_t, Ptr<TcpLeanReceiver>> m_receivers;
};

} // namespace ns3

#endif // DISAGGSIM_TCP_LEAN_HOST_H
