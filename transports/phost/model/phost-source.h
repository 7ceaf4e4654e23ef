/*
 * disaggsim: the sending side of one pHost host.
 */
#ifndef DISAGGSIM_PHOST_SOURCE_H
#define DISAGGSIM_PHOST_SOURCE_H

#include "phost-params.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <deque>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ns3
{

class PhostHost;

/**
 * \brief The source half of pHost on one host (pHost CoNEXT'15 §3.1, §3.2):
 *
 * - Flow start: an RTS goes to the destination at once; the flow may send its first
 *   FreeTokens packets without tokens.  If the host's sender is idle and the new flow is
 *   its most urgent, the RTS rides in the first free packet's header (DATA_RTS: same
 *   information, same departure time, no extra 40 B in front of the data); otherwise it
 *   leaves as a 40 B control packet.
 * - Sending: at most one data packet per wire time of that packet (the host paces itself to
 *   its access link), for the flow with the fewest packets left to send (SRPT across its
 *   flows, ties to the earlier flow) that holds a usable token or a free token.  A token
 *   names the packet to send.  Within the flow a received token goes before the free ones:
 *   it lapses TokenExpiry after its arrival, a free token never does (earliest deadline
 *   first, as the authors' source: NetSys/simulator ext/capabilityflow.cpp).
 * - Token expiry: a token lapses if it is not used within TokenExpiry of its arrival.
 * - Free tokens: one BDP of the flow's own path (PhostParams::FreeTokens), so that on an
 *   idle path the first token arrives just as the last free packet leaves.
 * - The RTS is sent again after RetransmissionTimeout, then after 2, 4, ... (at most 1024)
 *   timeouts, until a token or the ACK arrives (the destination owns recovery once it knows
 *   the flow).
 */
class PhostSource
{
  public:
    PhostSource (PhostHost& host, const PhostParams& params);

    /// Start sending flow \p flowId of \p sizeBytes to host \p dst.
    void StartFlow (uint64_t flowId, uint16_t dst, uint64_t sizeBytes);
    void ReceiveToken (uint64_t flowId, uint32_t packet);
    void ReceiveAck (uint64_t flowId);
    void Stop ();

    uint64_t GetDataPacketsSent () const
    {
        return m_dataSent;
    }

    uint64_t GetTokensExpired () const
    {
        return m_tokensExpired;
    }

    uint64_t GetRtsResent () const
    {
        return m_rtsResent;
    }

    /// \returns flows started and not yet acknowledged.
    std::size_t GetNFlows () const
    {
        return m_flows.size ();
    }

  private:
    struct Flow
    {
        uint16_t dst{0};
        uint64_t sizeBytes{0};
        uint32_t nPackets{0};
        uint32_t nextFree{0};
        uint32_t freeLimit{0};
        uint32_t unsent{0};                           ///< packets never sent yet
        std::vector<bool> sent;                       ///< per packet
        std::deque<std::pair<uint32_t, Time>> tokens; ///< (packet, arrival)
        uint64_t order{0};
        bool ready{false};
        bool rtsInFirstPacket{false};
        bool tokenSeen{false};
        uint32_t rtsBackoff{1}; ///< the next RTS retry is this many timeouts away
        EventId rtsTimer;
    };

    using Key = std::pair<std::pair<uint32_t, uint64_t>, uint64_t>; // ((unsent, order), id)

    static Key KeyOf (const Flow& flow, uint64_t flowId)
    {
        return {{flow.unsent, flow.order}, flowId};
    }

    void MakeReady (uint64_t flowId, Flow& flow);
    void SendRts (uint64_t flowId, const Flow& flow);
    void RtsTimeout (uint64_t flowId);
    /// Send one data packet if the link is free and some flow may send; re-arm the pacer.
    void SendNext ();
    void Kick ();

    PhostHost& m_host;
    const PhostParams& m_params;
    std::unordered_map<uint64_t, Flow> m_flows;
    std::set<Key> m_ready; ///< flows holding a free or received token, by SRPT
    uint64_t m_nextOrder{0};
    Time m_nextSend; ///< the access link is busy with our data until then
    EventId m_sendEvent;
    uint64_t m_dataSent{0};
    uint64_t m_tokensExpired{0};
    uint64_t m_rtsResent{0};
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_SOURCE_H
