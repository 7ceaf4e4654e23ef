/*
 * disaggsim: the receiving side of one pHost host: token pacing, SRPT, downgrade, recovery.
 */
#ifndef DISAGGSIM_PHOST_DESTINATION_H
#define DISAGGSIM_PHOST_DESTINATION_H

#include "phost-params.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <deque>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ns3
{

class PhostHost;

/**
 * \brief The destination half of pHost on one host (pHost CoNEXT'15 §3.1-§3.2):
 *
 * - A flow is known from its RTS, or from any of its data packets (each carries the flow
 *   size).  Its first min(FreeTokens, packets) packets count as granted at that moment.
 * - GrantAfterFirstData: a flow with free packets known from a lone RTS (its source, busy
 *   with a more urgent flow, did not send the RTS in a first data packet) gets no token
 *   before its first data packet arrives, or before RetransmissionTimeout if none does (its
 *   free packets lost): tokens sent at once would lapse at the busy source.
 * - Token pacing: one token per PacketTime (the wire time of a full data packet on the
 *   host's access link), each to the active flow with the fewest packets still to receive
 *   (SRPT; ties to the flow known first) among flows not downgraded that have a packet to
 *   grant.  A token names the packet: the oldest granted one that has not arrived within
 *   RetransmissionTimeout of its grant (loss recovery: re-issued token), else the next
 *   never-granted one.  A flow whose every packet is granted and not yet due for
 *   re-issue waits off the SRPT list until its oldest grant times out.
 * - Downgrade: DowngradeTokens tokens in a row to a flow with no data packet of that flow
 *   arriving in between, the first sent at least 2 BaseRtt ago (time to be answered),
 *   downgrade it for DowngradeTime: meanwhile it ranks after every flow
 *   that is not downgraded, so the tokens go to other senders (its source is busy with a
 *   more urgent flow elsewhere); it still gets the tokens no other flow can use.
 * - In-flight window: a token slot is skipped while InFlightWindow granted packets (free
 *   ones included) granted within the last InFlightHorizon have not arrived.  Free packets
 *   of new flows add to the token-clocked data, and tokens paced at exactly the link rate
 *   would never drain the queue they build; this drains it.  A lone flow never reaches the
 *   window (one BDP in flight).
 * - When every packet arrived: FlowFinished, and an ACK to the source (again for every RTS
 *   of a finished flow, in case the ACK was lost).
 */
class PhostDestination
{
  public:
    PhostDestination (PhostHost& host, const PhostParams& params);

    void ReceiveRts (uint64_t flowId, uint16_t src, uint64_t sizeBytes);
    void ReceiveData (uint64_t flowId, uint16_t src, uint64_t sizeBytes, uint32_t packet);
    void Stop ();

    uint64_t GetTokensSent () const
    {
        return m_tokensSent;
    }

    uint64_t GetTokensReissued () const
    {
        return m_tokensReissued;
    }

    uint64_t GetDowngrades () const
    {
        return m_downgrades;
    }

    uint64_t GetDuplicates () const
    {
        return m_duplicates;
    }

    uint64_t GetSlotsSkipped () const
    {
        return m_slotsSkipped;
    }

    /// \returns flows known and not finished.
    std::size_t GetNFlows () const
    {
        return m_flows.size ();
    }

  private:
    struct Flow
    {
        uint16_t src{0};
        uint64_t sizeBytes{0};
        uint32_t nPackets{0};
        uint32_t nReceived{0};
        std::vector<bool> received;
        std::vector<Time> grantedAt; ///< per packet: time of its latest grant (-1: none)
        std::vector<bool> counted;   ///< per packet: its latest grant counts as in flight
        uint32_t nextNew{0};         ///< first packet never granted
        std::deque<std::pair<uint32_t, Time>> granted; ///< (packet, grant time), oldest first
        uint32_t tokensSinceData{0};
        Time firstUnanswered; ///< the first of those tokens
        uint64_t order{0};
        bool active{false};
        bool downgraded{false};
        bool awaitingData{false}; ///< known from a lone RTS: no token before its first data
        EventId wake;
        EventId downgradeEnd;
    };

    /// (downgraded, packets left, order, flow id): downgraded flows after all others.
    using Key = std::tuple<bool, uint32_t, uint64_t, uint64_t>;

    static Key KeyOf (const Flow& flow, uint64_t flowId)
    {
        return {flow.downgraded, flow.nPackets - flow.nReceived, flow.order, flowId};
    }

    /// Make the flow known; \p fromRts: from its RTS alone (no data packet yet).
    Flow& Register (uint64_t flowId, uint16_t src, uint64_t sizeBytes, bool fromRts);
    void Activate (uint64_t flowId);
    void Deactivate (uint64_t flowId, Flow& flow, Time until);
    void SetDowngraded (uint64_t flowId, bool downgraded);
    /// \returns true and the packet to grant now, or false (nothing due).
    bool NextGrant (Flow& flow, uint32_t& packet, bool& reissue);
    void NoteGrant (uint64_t flowId, Flow& flow, uint32_t packet, Time now);
    /// Stop counting grants older than InFlightHorizon as in flight.
    void AgeGrants (Time now);
    void EnsureTick ();
    void Tick ();
    void Finish (uint64_t flowId);

    PhostHost& m_host;
    const PhostParams& m_params;
    std::unordered_map<uint64_t, Flow> m_flows;
    std::unordered_set<uint64_t> m_finished;
    std::set<Key> m_active; ///< flows that may get a token, by SRPT
    uint64_t m_nextOrder{0};
    Time m_lastToken;
    bool m_anyToken{false};
    EventId m_tick;
    uint64_t m_tokensSent{0};
    uint64_t m_tokensReissued{0};
    uint64_t m_downgrades{0};
    uint64_t m_duplicates{0};
    uint64_t m_slotsSkipped{0};

    struct Grant
    {
        Time at;
        uint64_t flowId;
        uint32_t packet;
    };

    std::deque<Grant> m_grants; ///< grants of the last InFlightHorizon, oldest first
    uint32_t m_inFlight{0};     ///< of those, packets not arrived yet
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_DESTINATION_H
