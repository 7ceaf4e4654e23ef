/*
 * disaggsim: the sending end of one flow over an ns-3 TCP socket.
 */
#ifndef DISAGGSIM_TCP_FLOW_SENDER_H
#define DISAGGSIM_TCP_FLOW_SENDER_H

#include "topologies/model/flow-transport.h"

#include "ns3/callback.h"
#include "ns3/node.h"
#include "ns3/simple-ref-count.h"
#include "ns3/socket.h"

namespace ns3
{

/**
 * \brief Opens a TCP connection ahead of its flow (Open), and at the flow's start hands the
 * socket all of the flow's bytes (Start): as much as the send buffer takes, in multiples of
 * the MSS so that the segmentation matches the ideal FCT's, the rest as buffer space frees.
 * After the last byte is written the socket is closed (the FIN follows the data).
 *
 * If the handshake has not completed at the start time, the bytes go out when it completes
 * (and the FCT includes the wait; TcpFlowTransport counts such flows).
 */
class TcpFlowSender : public SimpleRefCount<TcpFlowSender>
{
  public:
    /// \p onBound is called once the socket has its local port: (flow index, port).
    TcpFlowSender (uint64_t flowIndex, const FlowSpec& flow, Ptr<Node> node, const Address& remote,
                   uint32_t mssBytes, Callback<void, uint64_t, uint16_t> onBound);

    /// Create the socket, bind it (an ephemeral port) and send the SYN.
    void Open ();
    /// Hand the flow's bytes to the socket (scheduled one time step before the start time:
    /// TcpSocketBase::Send defers SendPendingData by TimeStep(1)).
    void Start ();
    /// Drop the socket callbacks and the socket (after the flow finished).
    void Release ();

    bool WasConnectedAtStart () const
    {
        return m_connectedAtStart;
    }

  private:
    void ConnectionSucceeded (Ptr<Socket> socket);
    void ConnectionFailed (Ptr<Socket> socket);
    void SendSpaceAvailable (Ptr<Socket> socket, uint32_t available);
    void Write ();

    uint64_t m_flowIndex;
    FlowSpec m_flow;
    Ptr<Node> m_node;
    Address m_remote;
    uint32_t m_mssBytes;
    Callback<void, uint64_t, uint16_t> m_onBound;
    Ptr<Socket> m_socket;
    uint64_t m_writtenBytes{0};
    bool m_connected{false};
    bool m_started{false};
    bool m_connectedAtStart{false};
};

} // namespace ns3

#endif // DISAGGSIM_TCP_FLOW_SENDER_H
