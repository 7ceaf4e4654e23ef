/*
 * disaggsim: the resolved pHost parameters shared by every host of a run.
 */
#ifndef DISAGGSIM_PHOST_PARAMS_H
#define DISAGGSIM_PHOST_PARAMS_H

#include "ns3/nstime.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief pHost parameters after PhostFlowTransport::ConfigureFabric derived the ones left
 * at 0 from the topology (transports/phost/doc/phost.md §4 gives each source).
 */
struct PhostParams
{
    uint32_t mssBytes{1460};         ///< payload bytes of a full data packet
    uint64_t accessBitRate{0};       ///< host access link rate (bit/s)
    Time packetTime;                 ///< wire time of a full data packet at the access rate
    uint32_t freeTokensIntraRack{0}; ///< packets a flow sends before any token (§3.1), in a rack
    uint32_t freeTokensInterRack{0}; ///< the same across racks
    uint32_t hostsPerRack{1};        ///< to tell the two apart (rack = host / hostsPerRack)
    Time tokenExpiry;                ///< a token unused for this long lapses (§3.1)
    uint32_t downgradeTokens{0};     ///< unanswered tokens that downgrade a flow (§3.2)
    Time downgradeTime;              ///< how long a downgraded flow gets no token (§3.2)
    Time answerTime;            ///< a token unanswered this long counts for a downgrade (2 BaseRtt)
    Time retransmissionTimeout; ///< a granted packet not arrived after this is re-granted
    uint32_t inFlightWindow{0}; ///< granted packets in flight that pause the tokens
    Time inFlightHorizon;       ///< grants older than this no longer count as in flight
    bool grantAfterFirstData{true}; ///< a flow known from a lone RTS waits for its first data
    uint32_t priorityLevels{2};     ///< switch priority levels (§3.3)
    uint32_t controlLevel{0};       ///< FabricHeader::trafficClass of RTS, tokens, ACKs
    uint32_t freeDataLevel{1};      ///< trafficClass of data sent on free tokens
    uint32_t tokenDataLevel{1};     ///< trafficClass of data sent on tokens

    /// \returns the free tokens of a flow from host \p src to host \p dst: one BDP of its
    /// own path (a packet there and a token back).
    uint32_t FreeTokens (uint32_t src, uint32_t dst) const
    {
        return src / hostsPerRack == dst / hostsPerRack ? freeTokensIntraRack : freeTokensInterRack;
    }
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_PARAMS_H
