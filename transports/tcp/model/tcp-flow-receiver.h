/*
 * disaggsim: the receiving end of the flows towards one host.
 */
#ifndef DISAGGSIM_TCP_FLOW_RECEIVER_H
#define DISAGGSIM_TCP_FLOW_RECEIVER_H

#include "ns3/callback.h"
#include "ns3/node.h"
#include "ns3/simple-ref-count.h"
#include "ns3/socket.h"

#include <unordered_map>

namespace ns3
{

/**
 * \brief One listening TCP socket per host.  Senders announce their (source host, source
 * port) -> flow mapping with Expect(); each accepted connection is matched to its flow, its
 * bytes are counted, and when the last byte arrives the receiver reports the flow finished
 * (at that simulation time) and closes the connection.
 */
class TcpFlowReceiver : public SimpleRefCount<TcpFlowReceiver>
{
  public:
    /// \p onFinished(flow index) fires when the flow's last byte arrived.
    TcpFlowReceiver (Ptr<Node> node, uint16_t port, Callback<void, uint64_t> onFinished);

    /// Open the listening socket.
    void Listen ();
    /// Announce that \p srcHost's port \p srcPort will carry flow \p flowIndex of
    /// \p sizeBytes.
    void Expect (uint32_t srcHost, uint16_t srcPort, uint64_t flowIndex, uint64_t sizeBytes);
    /// Close the listening socket and every open connection.
    void Stop ();

  private:
    struct Expected
    {
        uint64_t flowIndex;
        uint64_t sizeBytes;
    };

    struct Connection
    {
        uint64_t flowIndex;
        uint64_t sizeBytes;
        uint64_t receivedBytes;
        Ptr<Socket> socket;
    };

    static uint64_t Key (uint32_t srcHost, uint16_t srcPort)
    {
        return (static_cast<uint64_t> (srcHost) << 16) | srcPort;
    }

    bool ConnectionRequest (Ptr<Socket> socket, const Address& from);
    void NewConnection (Ptr<Socket> socket, const Address& from);
    void Read (Ptr<Socket> socket);

    Ptr<Node> m_node;
    uint16_t m_port;
    Callback<void, uint64_t> m_onFinished;
    Ptr<Socket> m_listener;
    std::unordered_map<uint64_t, Expected> m_expected;
    std::unordered_map<Socket*, Connection> m_connections;
};

} // namespace ns3

#endif // DISAGGSIM_TCP_FLOW_RECEIVER_H
